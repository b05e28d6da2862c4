// Package cgroup manages the Linux control groups of isolated tasks: it
// detects whether the machine has cgroups v1 (one hierarchy per
// controller, including the "hybrid" layout with an empty v2 mount beside
// them) or v2 (one unified hierarchy), creates one group per task with
// its limits (memory hard and soft limits, CPU shares or weight, a cpuset,
// a process count limit), moves processes into it, reads its usage and
// out-of-memory kills, and kills and removes it.
//
// Groups live under a parent named "drover" in each v1 hierarchy
// (<mount>/drover/<name>) and under drover.slice in v2
// (<mount>/drover.slice/<name>.scope).
//
// Usage:
//
//	h, err := cgroup.Detect()          // from /proc/self/mountinfo
//	g := h.Group("<alloc id>.<task>")   // no I/O yet
//	err = g.Create(cgroup.Limits{MemoryBytes: 256 << 20, CPUShares: 500})
//	err = g.Add(pid)
//	st, err := g.Stats()
//	err = g.Destroy()                   // kills what is left, removes it
//
// It must never start processes, and never touch a group it did not name
// (everything it writes is under its own parents).
package cgroup

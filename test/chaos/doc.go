// Package chaos is Drover's Jepsen-style fault suite (issue 22): three
// servers and two clients run as separate `drover agent` processes, each
// in its own network namespace joined to a bridge by a veth pair; a
// workload of concurrent writers drives jobs through the HTTP API with
// Nomad's Go client while one fault is injected (a partition, SIGKILL,
// SIGSTOP, a full restart, a full disk); the recorded history is then
// checked: linearizability per job (porcupine), no acknowledged write
// lost, the number of task processes on the client hosts against each
// group's count (from /proc, every 100 ms), and convergence after healing.
//
// It needs root (namespaces, nftables, mounts). Everything it creates is
// named with a per-run prefix (drchXXX) and removed when the run ends,
// also when it fails; leftovers of a crashed run are removed by the next.
// Run it with `make chaos SCENARIO=... RUNS=N SEED=...`; `go test` runs a
// short version and skips it where namespaces are unavailable.
// docs/reliability.md describes the scenarios and records the results.
//
// It must never touch anything it did not create: namespaces, links,
// mounts and processes of other prefixes, or processes outside its own
// namespaces.
package chaos

// Package exec is the exec task driver: it runs a command isolated, as
// Nomad's exec driver does. The task runs chrooted in its task directory,
// which holds read-only bind mounts of the client's chroot_env (Nomad's
// default: /bin, /etc, /lib, /lib32, /lib64, /run/resolvconf, /sbin,
// /usr), the shared alloc directory at /alloc, and fresh /proc, /dev and
// /sys; in new mount, UTS, PID and IPC namespaces (pid_mode and ipc_mode
// "host" keep the host's); as the task's user (default nobody) with
// Nomad's default capabilities (cap_add, cap_drop, the plugin's
// allow_caps); inside a cgroup of its own that enforces the memory limit
// (memory_max as the hard limit with memory as the soft one, or memory
// alone), CPU shares from the MHz, reserved cores as the cpuset and a
// process count limit. cgroups v1 and v2 are both handled (package
// cgroup); the fingerprint finds which, and reports the driver only when
// the client runs as root with the controllers present.
//
// It is built on raw_exec's supervisor (rawexec.Flavor), so tasks
// outlive the client, are re-attached after a restart and report their
// real exit code the same way:
//
//	client ──> supervisor (drover-exec-supervisor: creates the cgroup)
//	             └─> init (drover-exec-init, new namespaces, PID 1)
//	                   waits to be put in the cgroup, mounts, pivot_root,
//	                   drops to the user ──execve──> the task (still PID 1)
//
// Both are the client's own executable started again; this package's
// init function recognises them by argv[0]. The init reports a failure
// (a command missing from the chroot: the kernel's message) on a
// close-on-exec pipe, which closes empty once the task runs. When the
// task exits, the supervisor reads the cgroup's OOM kill count (an OOM
// kill is reported as Nomad's "OOM Killed"), kills whatever is left in
// the cgroup and removes it; the client removes it again if the
// supervisor could not. Usage comes from the cgroup (TaskStats).
//
// It must never mount anything in the host's mount namespace, and never
// run the task as root unless the task asks for it.
package exec

// Package docker is the docker task driver: it runs a task as a container
// of a local Docker daemon, through the daemon's API (moby's Go client,
// with API version negotiation, so daemons from 20.10 on work).
//
// Start pulls the task's image unless the daemon has it (or force_pull):
// one pull per image reference at a time on the node, however many tasks
// ask for it. It creates the container with the task's environment (the
// NOMAD_* variables, ports included), the allocation directory mounted at
// /alloc and the task's local and secrets directories at /local and
// /secrets, the group network's ports by label published on the host
// (host port -> the port's to, or the same port), labels naming the
// allocation, and the task's resources enforced by the daemon: CPU MHz as
// CPU shares, cores as a cpuset (the allocation's reserved cores, or the
// first cores no other docker task of this client holds), memory as the
// memory limit (with memory_max: memory is the reservation and
// memory_max the limit, as in Nomad), and a pids limit. Then it starts it.
//
// Output: the container's stdout and stderr are followed through the
// daemon's log API (with timestamps) and written to the task's output
// FIFOs, which the client drains into rotated log files. The timestamp of
// the last message written is kept in <alloc dir>/<task>@docker/logs_since
// whenever the client has drained the FIFOs (checked every 250ms and when
// the client stops), so a client that restarts resumes the stream after
// it: output left in a pipe by a client that stopped is written again,
// never lost (unlike raw_exec's task, the driver does not outlive the
// client to keep the pipe open).
//
// Exit: the daemon's wait reports the exit code; an OOM-killed container
// reports its code (137) with ErrOOMKilled. The container is removed once
// its exit is known (gc { container = true }, the default), then the
// handle's Wait returns. Stop sends the kill signal, then SIGKILL after
// the kill timeout.
//
// Re-attach: the handle state saves the container's ID. A client started
// later inspects it: a running container is adopted (its exit is reported
// when it comes), one that exited meanwhile is reported with its real exit
// code, a missing one is driver.ErrTaskGone. Close detaches a client's
// handles without touching their containers (the client shuts down and a
// later one adopts them).
//
// Images: each image a task uses is held by that task; when the last
// holder is gone and gc { image = true } (the default), the image is
// removed after gc.image_delay (3m), unless a task takes it again first.
//
// The fingerprint pings the daemon: driver.docker = "1" and
// driver.docker.version are node attributes only while it answers.
//
// The package must never talk to a registry itself (pulls go through the
// daemon), never remove a container or image it did not create or use for
// a task, and never write task logs anywhere but the FIFOs it is given.
package docker

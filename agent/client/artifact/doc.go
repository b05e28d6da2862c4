// Package artifact fetches a task's artifact blocks, as Nomad's client
// does, with hashicorp/go-getter (v2): http and https downloads (with the
// checksum option enforced), archives unpacked (tar, tar.gz, tgz, tar.bz2,
// tar.xz, tar.zst, zip, gz, bz2, xz, zst) unless the mode is file or the
// archive option is false, local files, and git and hg repositories when
// their programs are installed.
//
// A Getter fetches one artifact at a time (Fetch). It follows Nomad's
// sandbox rules:
//
//   - go-getter runs in a child process: the client's own executable
//     started again (the re-exec pattern, as the raw_exec supervisor), fed
//     its parameters on stdin, with a minimal environment (PATH, HOME, and
//     TMPDIR inside the allocation directory), in a process group of its
//     own that is killed at the deadline or when the task is killed. A
//     crash or a runaway decompressor in it cannot take the agent down.
//   - Everything is fetched into a fresh staging directory inside the
//     allocation directory, never through a symlink (go-getter's
//     DisableSymlinks), with setuid and setgid bits masked, within
//     Nomad's default limits: 100 GB per HTTP download, 4096 files and
//     100 GB unpacked per archive, 30 minutes per HTTP read, git or hg
//     command, and 31 minutes for the whole fetch.
//   - A local file source must lie inside the allocation directory (it is
//     read through an os.Root there); git and hg sources must be
//     http(s), ssh or git URLs (no file:// repositories, no ext::).
//   - The staged result is inspected: a symlink that leads out of the
//     artifact, or a device, FIFO or socket, fails the fetch. It is then
//     moved to its destination through an os.Root on the allocation
//     directory, so no destination, and no symlink on the way to one,
//     leads out of it.
//
// The package never decides what a failed fetch does to the task: the
// task runner reports it ("Failed Artifact Download") and applies the
// restart policy. It never writes outside the allocation directory.
package artifact

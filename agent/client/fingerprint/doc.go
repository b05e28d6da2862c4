// Package fingerprint describes the machine a client runs on: CPU (cores,
// MHz per core, total compute = cores x MHz), memory, disk free under the
// data directory, OS and kernel, host name and IP address. It returns them
// as Nomad-named node attributes ("cpu.arch", "kernel.name", "os.name",
// "unique.hostname", "unique.network.ip-address", ...) plus the node's
// resources.
//
// It reads /proc (the root is configurable so tests use fixture files) and
// never fails: what cannot be read gets a sane default and is logged. It
// must never talk to servers or know about drivers.
package fingerprint

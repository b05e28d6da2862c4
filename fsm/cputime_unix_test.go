//go:build unix

package fsm

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system, all threads, GC
// included) this process has used. Benchmarks report it per operation:
// on a shared machine it varies far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

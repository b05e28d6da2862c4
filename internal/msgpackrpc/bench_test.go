package msgpackrpc

import (
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// BenchmarkRoundTrip is one net/rpc call over TCP loopback (client and
// server in this process, so B/op and allocs/op count both sides), with
// the generic codec and with this package's on both ends: a blocking
// Node.GetClientAllocs's request and answer (a 20-entry index map), and a
// Plan.Submit placing 100 allocations (about 60 KB).
func BenchmarkRoundTrip(b *testing.B) {
	for _, cc := range codecs {
		addr := startServer(b, cc.new)
		client := dial(b, addr, cc.new)
		b.Run("GetClientAllocs/"+cc.name, func(b *testing.B) {
			req, _ := clientAllocsCall()
			defer reportCPU(b)()
			for b.Loop() {
				var reply structs.NodeClientAllocsResponse
				if err := client.Call("Node.GetClientAllocs", req, &reply); err != nil || len(reply.Allocs) != 20 {
					b.Fatalf("call: %v, %d allocs", err, len(reply.Allocs))
				}
			}
		})
		b.Run("PlanSubmit/"+cc.name, func(b *testing.B) {
			req, _ := planCall()
			defer reportCPU(b)()
			for b.Loop() {
				var reply structs.PlanResponse
				if err := client.Call("Plan.Submit", req, &reply); err != nil || reply.Index != 100 {
					b.Fatalf("call: %v, index %d", err, reply.Index)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time (user and system, both ends of
// the call) per operation as cpu-ns/op: on a loopback round trip ns/op is
// mostly waiting.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

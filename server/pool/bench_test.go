package pool

import (
	"testing"
)

// BenchmarkCall measures one small RPC through a pooled session: serial
// (latency) and from many goroutines at once (throughput), against a
// server that writes straight to its connections and one that coalesces
// its writes as the real server does (netutil.CoalescingConn).
func BenchmarkCall(b *testing.B) {
	for _, srv := range []struct {
		name     string
		coalesce bool
	}{{"plain", false}, {"coalescing", true}} {
		b.Run(srv.name, func(b *testing.B) {
			ts := startServerWith(b, "127.0.0.1:0", srv.coalesce)
			p := newPool(b, Config{})
			call := func() {
				var reply EchoReply
				if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "hello"}, &reply); err != nil || reply.Msg != "hello" {
					b.Fatalf("call: %v %+v", err, reply)
				}
			}
			call() // dial outside the timing
			b.Run("serial", func(b *testing.B) {
				for b.Loop() {
					call()
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.SetParallelism(32)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call()
					}
				})
			})
		})
	}
}

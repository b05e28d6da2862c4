package pool

import (
	"testing"
)

// BenchmarkCall measures one small RPC through a pooled session: serial
// (latency) and from many goroutines at once (throughput, where frames of
// concurrent calls share writes).
func BenchmarkCall(b *testing.B) {
	ts := startServer(b, "127.0.0.1:0")
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
}

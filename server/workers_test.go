package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
)

// paused counts s's paused workers.
func paused(s *server.Server) int {
	n := 0
	for _, w := range s.Workers() {
		if w.Paused() {
			n++
		}
	}
	return n
}

// TestWorkersPauseOnLeader: the leader keeps a quarter of its workers
// running; when it hands leadership over, its workers resume and the new
// leader's pause.
func TestWorkersPauseOnLeader(t *testing.T) {
	c := pipelineCluster(t, 3, 4)
	leader := c.WaitForLeader(t, 10*time.Second)
	expect := func(want map[*server.Server]int) func() string {
		return func() string {
			for s, n := range want {
				if got := paused(s); got != n {
					return fmt.Sprintf("%s has %d paused workers, want %d", s.RPCAddr(), got, n)
				}
			}
			return ""
		}
	}
	want := map[*server.Server]int{}
	for _, s := range c.Servers() {
		if len(s.Workers()) != 4 {
			t.Fatalf("%s runs %d workers, want 4", s.RPCAddr(), len(s.Workers()))
		}
		want[s] = 0
	}
	want[leader] = 3
	waitFor(t, 5*time.Second, expect(want))

	if err := leader.Raft().LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	var next *server.Server
	waitFor(t, 10*time.Second, func() string {
		next = c.WaitForLeader(t, 10*time.Second)
		if next == leader {
			return "leadership not transferred yet"
		}
		return ""
	})
	want[leader], want[next] = 0, 3
	waitFor(t, 5*time.Second, expect(want))
}

package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
)

func TestLeaderVerifierBatches(t *testing.T) {
	var rounds atomic.Int32
	release := make(chan struct{})
	v := &leaderVerifier{verify: func() error {
		rounds.Add(1)
		<-release
		return nil
	}}

	// The first caller starts round 1 and blocks in it.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := v.Verify(); err != nil {
			t.Error(err)
		}
	}()
	for rounds.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	// Callers arriving while round 1 runs all share round 2.
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.Verify(); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if got := rounds.Load(); got != 2 {
		t.Fatalf("rounds = %d, want 2 (one running, one shared by the waiters)", got)
	}

	// Errors reach every waiter of the round.
	v = &leaderVerifier{verify: func() error { return structs.ErrNotLeader }}
	if err := v.Verify(); !errors.Is(err, structs.ErrNotLeader) {
		t.Fatalf("err = %v", err)
	}
}

func TestMemberTable(t *testing.T) {
	now := time.Unix(1000, 0)
	m := func(id, addr string, hasState bool) structs.ServerMember {
		return structs.ServerMember{ID: id, Name: id, RPCAddr: addr, HasState: hasState}
	}
	tests := []struct {
		name string
		ops  func(tb *memberTable)
		want map[string]string // id -> "addr status hasState"
	}{
		{"gossip only is unknown", func(tb *memberTable) {
			tb.observe(m("a", "h:1", false), false, now)
		}, map[string]string{"a": "h:1 unknown false"}},
		{"direct is alive", func(tb *memberTable) {
			tb.observe(m("a", "h:1", false), true, now)
		}, map[string]string{"a": "h:1 alive false"}},
		{"stale direct is failed", func(tb *memberTable) {
			tb.observe(m("a", "h:1", false), true, now.Add(-time.Minute))
		}, map[string]string{"a": "h:1 failed false"}},
		{"gossip does not override direct address", func(tb *memberTable) {
			tb.observe(m("a", "h:1", false), true, now)
			tb.observe(m("a", "h:9", false), false, now)
		}, map[string]string{"a": "h:1 alive false"}},
		{"has-state is sticky", func(tb *memberTable) {
			tb.observe(m("a", "h:1", true), true, now)
			tb.observe(m("a", "h:1", false), false, now)
		}, map[string]string{"a": "h:1 alive true"}},
		{"new ID at an address replaces the old", func(tb *memberTable) {
			tb.observe(m("old", "h:1", true), true, now)
			tb.observe(m("new", "h:1", false), true, now)
		}, map[string]string{"new": "h:1 alive false"}},
		{"empty ID ignored", func(tb *memberTable) {
			tb.observe(m("", "h:1", false), true, now)
		}, map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := newMemberTable()
			tc.ops(tb)
			got := map[string]string{}
			for _, mem := range tb.snapshot(now, 10*time.Second) {
				got[mem.ID] = fmt.Sprintf("%s %s %v", mem.RPCAddr, mem.Status, mem.HasState)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQueryTimeout(t *testing.T) {
	tests := []struct {
		in       time.Duration
		min, max time.Duration
	}{
		{0, DefaultMaxQueryTime, DefaultMaxQueryTime + DefaultMaxQueryTime/16},
		{time.Second, time.Second, time.Second + time.Second/16},
		{time.Hour, MaxMaxQueryTime, MaxMaxQueryTime + MaxMaxQueryTime/16},
	}
	for _, tc := range tests {
		t.Run(tc.in.String(), func(t *testing.T) {
			for i := 0; i < 50; i++ {
				got := queryTimeout(&structs.QueryOptions{MaxQueryTime: tc.in})
				if got < tc.min || got > tc.max {
					t.Fatalf("queryTimeout(%v) = %v, want in [%v, %v]", tc.in, got, tc.min, tc.max)
				}
			}
		})
	}
}

func TestRetryForward(t *testing.T) {
	transport := errors.New("connection reset")
	abandoned := &pool.AbandonedError{Addr: "x", Method: "Job.Register", Cause: errors.New("leader silent")}
	tests := []struct {
		name          string
		err           error
		isRead        bool
		retry, unsure bool
	}{
		{"success", nil, false, false, false},
		{"not leader", structs.ErrNotLeader, false, true, false},
		{"no leader", structs.ErrNoLeader, false, true, false},
		{"not sent", &pool.NotSentError{Addr: "x", Err: transport}, false, true, false},
		{"transport error on write", transport, false, false, true},
		{"abandoned write", abandoned, false, false, true},
		{"abandoned read", abandoned, true, true, false},
		{"transport error on read", transport, true, true, false},
		{"endpoint error on read", structs.NewError(structs.ErrCodeInternal, "boom"), true, false, false},
		{"endpoint error on write", structs.NewError(structs.ErrCodeConflict, "boom"), false, false, false},
		{"validation", &structs.ValidationError{}, false, false, false},
		{"leadership lost", raftError(errLeadershipLostForTest()), false, false, true},
		{"leadership lost on read", raftError(errLeadershipLostForTest()), true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			retry, unsure := retryForward(tc.err, tc.isRead)
			if retry != tc.retry || unsure != tc.unsure {
				t.Fatalf("retryForward(%v) = %v, %v; want %v, %v", tc.err, retry, unsure, tc.retry, tc.unsure)
			}
		})
	}
}

func TestResendSafe(t *testing.T) {
	tests := []struct {
		method string
		args   any
		want   bool
	}{
		{"Job.Register", &structs.JobRegisterRequest{}, false},
		{"Job.Register", &structs.JobRegisterRequest{EnforceIndex: true}, true},
		{"Job.Deregister", &structs.JobDeregisterRequest{}, false},
		{"Node.UpdateStatus", &structs.NodeUpdateStatusRequest{}, true},
		{"Node.Register", &structs.NodeRegisterRequest{}, true},
		{"Node.UpdateAlloc", &structs.AllocUpdateRequest{}, false},
	}
	for _, tc := range tests {
		if got := resendSafe(tc.method, tc.args); got != tc.want {
			t.Errorf("resendSafe(%s, %+v) = %v, want %v", tc.method, tc.args, got, tc.want)
		}
	}
	conflict := structs.NewError(structs.ErrCodeConflict, "enforcing job modify index 3: job exists with conflicting job modify index 9")
	if got := structs.CodeOf(resentAnswer("Job.Register", "x", conflict)); got != structs.ErrCodeOutcomeUnknown {
		t.Fatalf("a resent register's conflict is %q, want outcome_unknown", got)
	}
	if got := structs.CodeOf(resentAnswer("Job.Register", "x", structs.ErrNotFound)); got != structs.ErrCodeNotFound {
		t.Fatalf("other answers pass: got %q", got)
	}
}

func TestLoadNodeIDPersists(t *testing.T) {
	dir := t.TempDir()
	id1, err := loadNodeID(&Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := loadNodeID(&Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if id1 == "" || id1 != id2 {
		t.Fatalf("ids %q, %q: want the same persisted ID", id1, id2)
	}
	if id, _ := loadNodeID(&Config{DataDir: dir, NodeID: "fixed"}); id != "fixed" {
		t.Fatalf("configured ID ignored: %q", id)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeIDFileName), []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadNodeID(&Config{DataDir: dir}); err == nil {
		t.Fatal("empty node-id file accepted")
	}
}

func TestAdvertiseAddr(t *testing.T) {
	tests := []struct {
		name      string
		advertise string
		bound     net.Addr
		want      string
		wantErr   bool
	}{
		{"unspecified bind", "", &net.TCPAddr{IP: net.IPv4zero, Port: 4647}, "127.0.0.1:4647", false},
		{"specific bind", "", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 1234}, "10.0.0.5:1234", false},
		{"configured", "srv.example:4647", &net.TCPAddr{IP: net.IPv4zero, Port: 4647}, "srv.example:4647", false},
		{"configured without port", "srv.example", &net.TCPAddr{}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&Config{AdvertiseAddr: tc.advertise}).advertiseAddr(tc.bound)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func errLeadershipLostForTest() error { return raft.ErrLeadershipLost }

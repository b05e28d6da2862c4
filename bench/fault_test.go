package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

func TestSelfRPCAddr(t *testing.T) {
	cases := []struct {
		name string
		m    nomad.AgentMember
		want string
	}{
		{"drover", nomad.AgentMember{Addr: "127.0.0.1", Port: 4647, Tags: map[string]string{"rpc_addr": "127.0.0.1:4647"}}, "127.0.0.1:4647"},
		{"nomad", nomad.AgentMember{Addr: "10.0.0.1", Port: 4648, Tags: map[string]string{"rpc_addr": "10.0.0.2", "port": "4647"}}, "10.0.0.2:4647"},
		{"nomad without rpc_addr", nomad.AgentMember{Addr: "10.0.0.1", Port: 4648, Tags: map[string]string{"port": "4647"}}, "10.0.0.1:4647"},
		{"ipv6", nomad.AgentMember{Tags: map[string]string{"rpc_addr": "::1", "port": "4647"}}, "[::1]:4647"},
		{"unknown", nomad.AgentMember{Addr: "10.0.0.1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := selfRPCAddr(&nomad.AgentSelf{Member: tc.m}); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// fakeCluster is a set of fake agents answering /v1/agent/self and
// /v1/status/leader from a shared view of who leads.
type fakeCluster struct {
	t       *testing.T
	servers []*httptest.Server
	rpc     []string

	mu      sync.Mutex
	views   []string // each agent's leader RPC address; guarded by mu
	selfErr bool     // agent self reports no rpc_addr; guarded by mu
}

func newFakeCluster(t *testing.T, n, leader int) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{t: t}
	for i := range n {
		fc.rpc = append(fc.rpc, "10.0.0."+string(rune('1'+i))+":4647")
		fc.views = append(fc.views, "")
	}
	for i := range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			fc.mu.Lock()
			view, hide := fc.views[i], fc.selfErr
			fc.mu.Unlock()
			switch req.URL.Path {
			case "/v1/status/leader":
				_ = json.NewEncoder(w).Encode(view)
			case "/v1/agent/self":
				tags := map[string]string{"rpc_addr": fc.rpc[i]}
				if hide {
					tags = nil
				}
				_ = json.NewEncoder(w).Encode(nomad.AgentSelf{
					Member: nomad.AgentMember{Tags: tags},
					Stats:  map[string]map[string]string{"raft": {"leader": map[bool]string{true: "true", false: "false"}[view == fc.rpc[i]]}},
				})
			default:
				http.NotFound(w, req)
			}
		}))
		t.Cleanup(srv.Close)
		fc.servers = append(fc.servers, srv)
	}
	fc.setLeader(leader)
	return fc
}

// setLeader makes every agent name server i (-1: none).
func (fc *fakeCluster) setLeader(i int) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for k := range fc.views {
		fc.views[k] = ""
		if i >= 0 {
			fc.views[k] = fc.rpc[i]
		}
	}
}

func (fc *fakeCluster) addresses() []string {
	var out []string
	for _, s := range fc.servers {
		out = append(out, s.URL)
	}
	return out
}

func TestFindLeader(t *testing.T) {
	fc := newFakeCluster(t, 3, 1)
	r := testRunner(t, &Config{Addresses: fc.addresses()})
	idx, rpcs, err := r.findLeader(context.Background(), r.liveIndexes())
	if err != nil || idx != 1 || strings.Join(rpcs, ",") != strings.Join(fc.rpc, ",") {
		t.Fatalf("findLeader = %d %q %v", idx, rpcs, err)
	}
	// Without RPC addresses in agent self, the raft flag decides.
	fc.mu.Lock()
	fc.selfErr = true
	fc.mu.Unlock()
	if idx, _, err := r.findLeader(context.Background(), r.liveIndexes()); err != nil || idx != 1 {
		t.Fatalf("by the raft flag: %d %v", idx, err)
	}
	// No leader anywhere.
	fc.setLeader(-1)
	if _, _, err := r.findLeader(context.Background(), r.liveIndexes()); err == nil || !strings.Contains(err.Error(), "no server names a leader") {
		t.Fatalf("no leader: %v", err)
	}
}

func TestLeaderKill(t *testing.T) {
	fc := newFakeCluster(t, 3, 2)
	const election = 150 * time.Millisecond
	var killed []int
	cfg := &Config{
		Addresses: fc.addresses(), KillLeaderAfter: 10 * time.Millisecond, BaselinePlaced: 3 * time.Second,
		KillServer: func(i int) error {
			killed = append(killed, i)
			fc.servers[i].CloseClientConnections()
			fc.servers[i].Close()
			fc.setLeader(-1)
			time.AfterFunc(election, func() { fc.setLeader(0) })
			return nil
		},
	}
	if err := cfg.checkKill(); err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, cfg)
	start := time.Now()
	k := r.startKiller(context.Background(), start)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the kill did not finish")
	}
	res, killedIdx, elected := k.finish()
	if len(killed) != 1 || killed[0] != 2 || killedIdx != 2 || elected != 0 {
		t.Fatalf("killed %v (index %d), elected %d", killed, killedIdx, elected)
	}
	if res.Error != "" || res.AtSeconds < 0.01 || res.Server != fc.servers[2].URL || res.RPCAddr != fc.rpc[2] || res.NewLeader != fc.rpc[0] {
		t.Fatalf("result %+v", res)
	}
	if res.ElectionSeconds < election.Seconds() || res.ElectionSeconds > 5 {
		t.Fatalf("election %v s, the fake took %v", res.ElectionSeconds, election)
	}
	if got := r.liveIndexes(); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("live servers %v", got)
	}
	for i := range 4 {
		if r.client(i) == r.clients[2] {
			t.Fatal("a killed server's client is still handed out")
		}
	}
	if a := res.allowance(); a < 5 || a > 5+res.ElectionSeconds+0.001 {
		t.Fatalf("allowance %v", a)
	}
	if !strings.Contains(res.String(), "new leader "+fc.rpc[0]+" known") {
		t.Fatalf("String() = %s", res)
	}
}

func TestLeaderKillAfterTheEnd(t *testing.T) {
	fc := newFakeCluster(t, 3, 0)
	cfg := &Config{Addresses: fc.addresses(), KillLeaderAfter: time.Hour, KillServer: func(int) error {
		t.Error("killed after the scenario ended")
		return nil
	}}
	r := testRunner(t, cfg)
	res, killed, elected := r.startKiller(context.Background(), time.Now()).finish()
	if res.AtSeconds != 0 || killed != -1 || elected != -1 || !strings.Contains(res.Error, "ended before the kill") {
		t.Fatalf("result %+v killed %d elected %d", res, killed, elected)
	}
	out := &Result{Kind: KindPlace, Kill: res}
	out.checkTargets()
	if len(out.Misses) != 1 || !strings.Contains(out.Misses[0], "no leader kill") {
		t.Fatalf("misses %q", out.Misses)
	}
}

func TestCheckKill(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"off", Config{}, ""},
		{"one server", Config{KillLeaderAfter: time.Second, Addresses: []string{"a"}, ServerPIDs: []int{1}}, "at least two"},
		{"no pids", Config{KillLeaderAfter: time.Second, Addresses: []string{"a", "b"}, ServerPIDs: []int{1}}, "PID of every server"},
		{"pids", Config{KillLeaderAfter: time.Second, Addresses: []string{"a", "b"}, ServerPIDs: []int{1, 2}}, ""},
		{"hook", Config{KillLeaderAfter: time.Second, Addresses: []string{"a", "b"}, KillServer: func(int) error { return nil }}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.checkKill()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("checkKill = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestKillTargets(t *testing.T) {
	kill := &KillResult{AfterSeconds: 5, AtSeconds: 5, Server: "http://a", PID: 10, RPCAddr: "a:1",
		ElectionSeconds: 1.5, NewLeader: "b:1", BaselinePlacedSeconds: 50}
	cases := []struct {
		name   string
		placed float64
		down   int
		misses []string
	}{
		{"within", 53.4, 0, nil},
		{"too slow", 53.6, 0, []string{"placed in 53.60 s with the leader kill, target 53.50 s (baseline 50.00 s + election 1.50 s + 2.00 s)"}},
		{"nodes down", 51, 3, []string{"3 nodes marked down after the leader kill, target 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Kind: KindPlace, PlacedSeconds: tc.placed, NodesDown: tc.down, Kill: kill,
				Servers: []ServerResult{{Address: "http://a", Leader: true, Killed: true}, {Address: "http://b", Elected: true}}}
			r.checkTargets()
			if strings.Join(r.Misses, "|") != strings.Join(tc.misses, "|") {
				t.Fatalf("misses %q, want %q", r.Misses, tc.misses)
			}
			row := r.MarkdownRow()
			if !strings.Contains(row, "| 5.00 s / 1.50 s |") {
				t.Fatalf("markdown row %s", row)
			}
			var text strings.Builder
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"Leader kill             http://a (pid 10, a:1) SIGKILLed at 5.00 s; new leader b:1 known 1.50 s later",
				"Placed vs baseline      ",
				"leader, killed",
				"follower, then leader",
			} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, text.String())
				}
			}
		})
	}
}

package sim

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/structs"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestNomadNodeIDs(t *testing.T) {
	cfg := (&Config{Servers: []string{"x"}, Nodes: 3, IDPrefix: "nt", Target: TargetNomad}).withDefaults()
	prefix := NodeListPrefix(TargetNomad, "nt")
	seen := map[string]bool{}
	for i := range 3 {
		n := cfg.buildNode(i, time.Unix(0, 0))
		if !uuidRE.MatchString(n.ID) || !uuidRE.MatchString(n.SecretID) {
			t.Fatalf("node %d: ID %q and secret %q must be UUIDs for Nomad", i, n.ID, n.SecretID)
		}
		if !strings.HasPrefix(n.ID, prefix) {
			t.Fatalf("node %d: ID %q lacks the list prefix %q", i, n.ID, prefix)
		}
		if seen[n.ID] {
			t.Fatalf("node %d: ID %q repeated", i, n.ID)
		}
		seen[n.ID] = true
		if n.Name != NodeID("nt", i) || n.Attributes["nomad.version"] == "" {
			t.Fatalf("node %d: name %q, attributes %v", i, n.Name, n.Attributes)
		}
	}
	if NodeListPrefix(TargetNomad, "other") == prefix {
		t.Fatal("two ID prefixes share a Nomad list prefix")
	}
	if got := NodeListPrefix(TargetDrover, "nt"); got != "nt-" {
		t.Fatalf("Drover list prefix = %q, want nt-", got)
	}
	if err := (&Config{Servers: []string{"x"}, Nodes: 1, Target: "consul"}).Validate(); err == nil {
		t.Fatal("an unknown target validated")
	}
}

// recordingTransport records the requests it is given and answers node
// writes with a TTL.
type recordingTransport struct {
	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	method string
	args   any
}

func (r *recordingTransport) RPC(addr, method string, args, reply any) error {
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{method, args})
	r.mu.Unlock()
	if resp, ok := reply.(*nomadNodeUpdateResponse); ok {
		resp.HeartbeatTTL, resp.Index = 10*time.Second, 7
	}
	return nil
}

func TestNomadTransportRewritesRequests(t *testing.T) {
	cfg := (&Config{Servers: []string{"x"}, Nodes: 1, IDPrefix: "nt", Target: TargetNomad}).withDefaults()
	node := cfg.buildNode(0, time.Unix(0, 0))
	rec := &recordingTransport{}
	tr := nodeTransport(&nomadTransport{inner: rec}, node)

	var resp structs.NodeUpdateResponse
	reg := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: "global"}}
	if err := tr.RPC("x", "Node.Register", reg, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.HeartbeatTTL != 10*time.Second || resp.Index != 7 {
		t.Fatalf("reply = %+v, want the TTL and index answered", resp)
	}
	fetch := &structs.AllocsGetRequest{AllocIDs: []string{"a"}, QueryOptions: structs.QueryOptions{Region: "global", MinQueryIndex: 3}}
	if err := tr.RPC("x", "Alloc.GetAllocs", fetch, &rawReply{}); err != nil {
		t.Fatal(err)
	}
	upd := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "a", NodeID: node.ID, ClientStatus: "running",
		TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{"t": {State: "running", Events: []*structs.TaskEvent{{Type: structs.TaskStarted}}}})}}}
	if err := (&nomadTransport{inner: rec}).RPC("x", "Node.UpdateAlloc", upd, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := (&nomadTransport{inner: rec}).RPC("x", "Alloc.GetAllocs", fetch, &rawReply{}); err == nil {
		t.Fatal("Alloc.GetAllocs without a node's secret was sent")
	}

	want := []string{"Node.Register", "Node.UpdateStatus", "Alloc.GetAllocs", "Node.UpdateAlloc"}
	if len(rec.calls) != len(want) {
		t.Fatalf("calls = %v, want %v", rec.calls, want)
	}
	for i, c := range rec.calls {
		if c.method != want[i] {
			t.Fatalf("call %d = %s, want %s", i, c.method, want[i])
		}
	}
	// Each request as Nomad decodes it: embedded structs inline.
	tests := []struct {
		name string
		args any
		want map[string]any
	}{
		{"register initializing", rec.calls[0].args, map[string]any{"Region": "global", "AuthToken": ""}},
		{"then ready", rec.calls[1].args, map[string]any{"NodeID": node.ID, "Status": "ready", "AuthToken": node.SecretID}},
		{"fetch with the node's secret", rec.calls[2].args, map[string]any{"AuthToken": node.SecretID, "MinQueryIndex": uint64(3)}},
		{"update with the first node's secret", rec.calls[3].args, map[string]any{"AuthToken": node.SecretID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := encodeDecode(t, tc.args)
			for k, v := range tc.want {
				if got := m[k]; fmt.Sprint(got) != fmt.Sprint(v) {
					t.Fatalf("%s = %v, want %v (request %v)", k, got, v, m)
				}
			}
		})
	}
	regNode := encodeDecode(t, rec.calls[0].args)["Node"].(map[string]any)
	if regNode["Status"] != structs.NodeStatusInit || regNode["NodePool"] != "default" {
		t.Fatalf("registered node = %v, want initializing in the default pool", regNode)
	}
	cpu := regNode["NodeResources"].(map[string]any)["Cpu"].(map[string]any)
	if fmt.Sprint(cpu["CpuShares"]) != fmt.Sprint(DefaultCPU) {
		t.Fatalf("node CPU = %v", cpu)
	}
	alloc := encodeDecode(t, rec.calls[3].args)["Alloc"].([]any)[0].(map[string]any)
	if alloc["NodeID"] != node.ID || alloc["ClientStatus"] != "running" {
		t.Fatalf("update = %v", alloc)
	}
}

// encodeDecode returns v as the servers' msgpack decoder sees it.
func encodeDecode(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := structs.Encode(0, v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := structs.Decode(b[1:], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecodeNomadJob(t *testing.T) {
	src := map[string]any{"Type": "batch", "Priority": 50, "Update": map[string]any{"Stagger": "x"},
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": 3, "Tasks": []any{
			map[string]any{"Name": "t", "Driver": "mock_driver", "Config": map[string]any{"run_for": "250ms"},
				"Resources": map[string]any{"Networks": []any{}}}}}}}
	b, err := structs.Encode(0, src)
	if err != nil {
		t.Fatal(err)
	}
	var job structs.Job
	if err := decodeNomadJob(b[1:], &job); err != nil {
		t.Fatal(err)
	}
	g := newGroupInfo(&job, "g", 0)
	if !g.batch || g.runFor != 250*time.Millisecond || len(g.tasks) != 1 || g.tasks[0] != "t" {
		t.Fatalf("group = %+v", g)
	}
}

// TestNomadMuxPreambles checks the connection and stream bytes Nomad's
// multiplexed RPC expects, against a server that insists on them.
func TestNomadMuxPreambles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := rpc.NewServer()
	if err := srv.RegisterName("Test", &testService{release: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != nomadRPCMultiplexV2 {
					return
				}
				cfg := yamux.DefaultConfig()
				cfg.LogOutput = io.Discard
				sess, err := yamux.Server(c, cfg)
				if err != nil {
					return
				}
				for {
					st, err := sess.Accept()
					if err != nil {
						return
					}
					go func() {
						if _, err := io.ReadFull(st, b[:1]); err != nil || b[0] != nomadRPCNomad {
							st.Close()
							return
						}
						srv.ServeCodec(msgpackrpc.NewCodecFromHandle(true, true, st, structs.MsgpackHandle))
					}()
				}
			}()
		}
	}()
	tr := newNomadMuxTransport()
	defer tr.Close()
	for i := range 3 { // the stream is reused: one preamble
		var reply EchoReply
		if err := tr.RPC(ln.Addr().String(), "Test.Echo", &EchoArgs{Data: []byte(fmt.Sprint(i))}, &reply); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if string(reply.Data) != fmt.Sprint(i) {
			t.Fatalf("call %d: reply %q", i, reply.Data)
		}
	}
}

// nomadBinary is a Nomad binary to test against: $NOMAD_BIN, or nomad on
// the PATH; "" when neither exists (the test is skipped, as on CI).
func nomadBinary() string {
	if p := os.Getenv("NOMAD_BIN"); p != "" {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	p, _ := exec.LookPath("nomad")
	return p
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// TestSimAgainstNomad runs simulated nodes against a real one-server
// Nomad cluster (skipped without a Nomad binary): they register and turn
// ready, a service-like batch job runs on them, a short one completes.
func TestSimAgainstNomad(t *testing.T) {
	bin := nomadBinary()
	if bin == "" {
		t.Skip("no Nomad binary (set NOMAD_BIN)")
	}
	if testing.Short() {
		t.Skip("starts a Nomad server")
	}
	dir := t.TempDir()
	ports := freePorts(t, 3)
	conf := fmt.Sprintf(`data_dir = %q
bind_addr = "127.0.0.1"
log_level = "WARN"
disable_update_check = true
advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
`, filepath.Join(dir, "data"), ports[0], ports[1], ports[2])
	if err := os.WriteFile(filepath.Join(dir, "server.hcl"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "nomad.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "agent", "-config", filepath.Join(dir, "server.hcl"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "nomad.log"))
			t.Logf("nomad log:\n%s", b)
		}
	}()
	api, err := nomadapi.NewClient(&nomadapi.Config{Address: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		HttpClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a Nomad leader", 30*time.Second, func() (bool, string) {
		l, err := api.Status().Leader()
		return err == nil && l != "", fmt.Sprint(l, err)
	})

	s, err := New(&Config{
		Servers: []string{fmt.Sprintf("127.0.0.1:%d", ports[1])}, Target: TargetNomad, Nodes: 3, IDPrefix: "nt",
		ReportDelay: 10 * time.Millisecond, UpdateInterval: 20 * time.Millisecond, Sessions: 1,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitRegistered(ctx); err != nil {
		t.Fatalf("%v (%s)", err, s.Stats())
	}
	waitUntil(t, "three ready nodes", 30*time.Second, func() (bool, string) {
		nodes, _, err := api.Nodes().List(&nomadapi.QueryOptions{Prefix: NodeListPrefix(TargetNomad, "nt")})
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
			}
		}
		return err == nil && ready == 3, fmt.Sprint(ready, err)
	})

	submit := func(id, runFor string, count int) {
		task := nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", runFor).
			Require(&nomadapi.Resources{CPU: new(10), MemoryMB: new(10)})
		task.LogConfig = &nomadapi.LogConfig{MaxFiles: new(1), MaxFileSizeMB: new(1)}
		tg := nomadapi.NewTaskGroup("g", count).AddTask(task)
		tg.EphemeralDisk = &nomadapi.EphemeralDisk{SizeMB: new(10)}
		job := nomadapi.NewBatchJob(id, id, "global", 50).AddDatacenter("dc1").AddTaskGroup(tg)
		if _, _, err := api.Jobs().Register(job, nil); err != nil {
			t.Fatalf("registering %s: %v", id, err)
		}
	}
	statuses := func(id string) map[string]int {
		allocs, _, err := api.Jobs().Allocations(id, true, nil)
		if err != nil {
			t.Fatalf("allocations of %s: %v", id, err)
		}
		out := map[string]int{}
		for _, a := range allocs {
			out[a.ClientStatus]++
		}
		return out
	}
	submit("long", "1h", 6)
	submit("short", "20ms", 3)
	waitUntil(t, "6 running and 3 complete allocations", 60*time.Second, func() (bool, string) {
		long, short := statuses("long"), statuses("short")
		return long["running"] == 6 && short["complete"] == 3, fmt.Sprintf("long %v, short %v; sim %s", long, short, s.Stats())
	})
	if st := s.Stats(); st.AllocsRunning != 6 || st.AllocsComplete != 3 || st.RegisterFailed != 0 {
		t.Fatalf("sim stats: %s", st)
	}
}

// testWriter sends log output to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

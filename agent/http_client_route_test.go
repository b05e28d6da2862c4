package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// routeClient is a local client on node that holds the allocations in
// logs (task "t" only); each opens its log at an offset.
type routeClient struct {
	node string
	logs map[string]func(offset int64) io.ReadCloser
}

func (c *routeClient) NodeID() string { return c.node }

func (c *routeClient) TaskLogs(allocID, task, logType string, follow bool, offset int64) (io.ReadCloser, error) {
	open, ok := c.logs[allocID]
	if !ok || task != "t" {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this client", allocID)
	}
	return open(offset), nil
}

// stringLog serves s from an offset (negative: from the end).
func stringLog(s string) func(offset int64) io.ReadCloser {
	return func(offset int64) io.ReadCloser {
		if offset < 0 {
			offset = max(int64(len(s))+offset, 0)
		}
		return io.NopCloser(strings.NewReader(s[min(int(offset), len(s)):]))
	}
}

// backendAgent serves node-b's HTTP API (its client holds a1) and counts
// the requests that reach it and the proxy header they carried.
type backendAgent struct {
	*httptest.Server
	mu      sync.Mutex
	hits    int    // guarded by mu
	proxied string // last logsProxiedHeader seen; guarded by mu
}

func newBackend(t *testing.T, c LocalClient) *backendAgent {
	t.Helper()
	b := &backendAgent{}
	h := NewHTTPHandler(newFake(), DefaultConfig(), hclog.NewNullLogger(), WithLocalClient(c))
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.hits++
		b.proxied = r.Header.Get(logsProxiedHeader)
		b.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *backendAgent) seen() (int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits, b.proxied
}

// routingServers answers the lookups: allocation a1 (and "home", on
// node-a) and node-b at httpAddr.
func routingServers(httpAddr string) *fakeServer {
	return newFake().
		on("Alloc.GetAlloc", func(args, reply any) error {
			switch args.(*structs.AllocSpecificRequest).AllocID {
			case "a1":
				reply.(*structs.SingleAllocResponse).Alloc = &structs.Allocation{ID: "a1", NodeID: "node-b"}
			case "home":
				reply.(*structs.SingleAllocResponse).Alloc = &structs.Allocation{ID: "home", NodeID: "node-a"}
			}
			return nil
		}).
		on("Node.GetNode", func(args, reply any) error {
			if args.(*structs.NodeSpecificRequest).NodeID == "node-b" {
				reply.(*structs.SingleNodeResponse).Node = &structs.Node{ID: "node-b", HTTPAddr: httpAddr,
					Attributes: map[string]string{"unique.network.ip-address": "127.0.0.1"}}
			}
			return nil
		})
}

func TestHTTPClientLogsRouting(t *testing.T) {
	backend := newBackend(t, &routeClient{node: "node-b", logs: map[string]func(int64) io.ReadCloser{"a1": stringLog("hello\nworld\n")}})
	backendAddr := strings.TrimPrefix(backend.URL, "http://")
	_, port, _ := net.SplitHostPort(backendAddr)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()

	cfg := DefaultConfig()
	cfg.NodeName = "front"
	nodeA := &routeClient{node: "node-a", logs: map[string]func(int64) io.ReadCloser{}}
	cases := []struct {
		name      string
		servers   *fakeServer
		local     LocalClient // nil: the front agent runs no client
		target    string
		proxied   bool // the request arrives already proxied
		wantCode  int
		wantBody  string
		wantProxy bool
	}{
		{name: "no local client", servers: routingServers(backendAddr), target: "/v1/client/fs/logs/a1?task=t&plain=true",
			wantCode: 200, wantBody: "hello\nworld\n", wantProxy: true},
		{name: "local client without the allocation", servers: routingServers(backendAddr), local: nodeA,
			target: "/v1/client/fs/logs/a1?task=t&plain=true&origin=end&offset=6", wantCode: 200, wantBody: "world\n", wantProxy: true},
		{name: "node bound to every address", servers: routingServers("0.0.0.0:" + port),
			target: "/v1/client/fs/logs/a1?task=t&plain=true", wantCode: 200, wantBody: "hello\nworld\n", wantProxy: true},
		{name: "already proxied once", servers: routingServers(backendAddr), local: nodeA, proxied: true,
			target: "/v1/client/fs/logs/a1?task=t", wantCode: 404, wantBody: `allocation "a1" not found on this client`},
		{name: "unknown allocation", servers: routingServers(backendAddr), target: "/v1/client/fs/logs/zz?task=t",
			wantCode: 404, wantBody: `allocation "zz" not found`},
		{name: "allocation on this agent's own node", servers: routingServers(backendAddr), local: nodeA,
			target: "/v1/client/fs/logs/home?task=t", wantCode: 404, wantBody: `allocation "home" not found on this client`},
		{name: "node unreachable", servers: routingServers(deadAddr), target: "/v1/client/fs/logs/a1?task=t",
			wantCode: 502, wantBody: "reaching the allocation's node at " + deadAddr},
		{name: "bad request answered locally", servers: routingServers(backendAddr), target: "/v1/client/fs/logs/a1",
			wantCode: 400, wantBody: "Missing task"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []HTTPOption
			if tc.local != nil {
				opts = append(opts, WithLocalClient(tc.local))
			}
			h := NewHTTPHandler(tc.servers, cfg, hclog.NewNullLogger(), opts...)
			hitsBefore, _ := backend.seen()
			req := httptest.NewRequest("GET", tc.target, nil)
			if tc.proxied {
				req.Header.Set(logsProxiedHeader, "elsewhere")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) ||
				(tc.wantCode == 200 && rec.Body.String() != tc.wantBody) {
				t.Fatalf("got %d %q; want %d %q", rec.Code, rec.Body, tc.wantCode, tc.wantBody)
			}
			hits, header := backend.seen()
			if proxiedNow := hits > hitsBefore; proxiedNow != tc.wantProxy {
				t.Fatalf("proxied to the node: %v, want %v", proxiedNow, tc.wantProxy)
			}
			if tc.wantProxy && header != "front" {
				t.Fatalf("proxied request carried %s=%q", logsProxiedHeader, header)
			}
		})
	}

	t.Run("framed stream through the proxy", func(t *testing.T) {
		h := NewHTTPHandler(routingServers(backendAddr), cfg, hclog.NewNullLogger())
		rec := do(t, h, "GET", "/v1/client/fs/logs/a1?task=t", "")
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, content type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		dec := json.NewDecoder(rec.Body)
		var got strings.Builder
		for dec.More() {
			var f logFrame
			if err := dec.Decode(&f); err != nil {
				t.Fatal(err)
			}
			got.Write(f.Data)
		}
		if got.String() != "hello\nworld\n" {
			t.Fatalf("frames carried %q", got.String())
		}
	})
}

// TestHTTPClientLogsProxyStreams: a followed log reaches the caller
// through the proxy line by line, while the task is still writing.
func TestHTTPClientLogsProxyStreams(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	backend := newBackend(t, &routeClient{node: "node-b", logs: map[string]func(int64) io.ReadCloser{"a1": func(int64) io.ReadCloser { return pr }}})
	front := httptest.NewServer(NewHTTPHandler(routingServers(strings.TrimPrefix(backend.URL, "http://")), DefaultConfig(), hclog.NewNullLogger()))
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", front.URL+"/v1/client/fs/logs/a1?task=t&plain=true&follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := bufio.NewReader(resp.Body)
	for _, want := range []string{"first\n", "second\n"} {
		go func() { _, _ = io.WriteString(pw, want) }()
		got, err := lines.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	pw.Close() // the task ends: so does the stream
	if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
		t.Fatalf("after the end: %q, %v", rest, err)
	}
}

// TestClientLogsRoutedBetweenAgents: a task runs on a client-only agent;
// its log is fetched through the HTTP API of another agent (server and
// client), which routes the request to the first.
func TestClientLogsRoutedBetweenAgents(t *testing.T) {
	scfg := DevConfig()
	scfg.Ports = Ports{}
	scfg.NodeName = "front"
	scfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	scfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
	}
	front, err := NewAgent(scfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Shutdown() })

	ccfg := DefaultConfig()
	ccfg.Client.Enabled = true
	ccfg.Client.Servers = []string{front.RPCAddr()}
	ccfg.DataDir = t.TempDir()
	ccfg.BindAddr = "127.0.0.1"
	ccfg.NodeName = "remote-client"
	ccfg.Ports = Ports{}
	ccfg.Plugins[PluginRawExec] = &PluginConfig{Enabled: true}
	ccfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
		cc.DestroyOnShutdown = true
	}
	remote, err := NewAgent(ccfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Shutdown() })

	srv := front.Server()
	job := rawExecJob("routed", structs.JobTypeService, "echo first line; exec sleep 1000")
	job.Constraints = []*structs.Constraint{{LTarget: "${node.unique.name}", RTarget: "remote-client", Operand: "="}}
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatalf("register: %v", err)
	}
	var alloc *structs.Allocation
	pollUntil(t, "allocation running on the remote client", 30*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "routed")
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientStatus == structs.AllocClientStatusRunning
	})
	if alloc.NodeID != remote.Client().NodeID() {
		t.Fatalf("placed on %s, want the remote client %s", alloc.NodeID, remote.Client().NodeID())
	}

	logsURL := front.HTTPURL() + "/v1/client/fs/logs/" + alloc.ID + "?task=t&plain=true"
	var body string
	pollUntil(t, "the task's output through the front agent", 10*time.Second, func() bool {
		resp, err := http.Get(logsURL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200 && body == "first line\n"
	})

	// Followed: the stream stays open while the task runs.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", logsURL+"&follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if resp.StatusCode != 200 || err != nil || line != "first line\n" {
		t.Fatalf("followed: status %d, %q, %v", resp.StatusCode, line, err)
	}
}

package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// netE2EEnv, set in a process started from this test binary, makes it a
// task of TestServicesChecksTemplatesEndToEnd: "server" or "reader".
const netE2EEnv = "DROVER_TEST_NET_E2E"

func init() {
	switch os.Getenv(netE2EEnv) {
	case "server":
		netE2EServer()
	case "reader":
		netE2EReader()
	}
}

// netE2EServer listens on the allocation's dynamic port. GET /health
// answers 200 until $OUT/stop-<alloc ID> exists, 500 after; GET /
// answers "hello from <port>".
func netE2EServer() {
	port := os.Getenv("NOMAD_PORT_http")
	stop := filepath.Join(os.Getenv("OUT"), "stop-"+os.Getenv("NOMAD_ALLOC_ID"))
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(stop); err == nil {
			http.Error(w, "stopped", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello from "+port) })
	err := http.ListenAndServe(net.JoinHostPort(os.Getenv("NOMAD_IP_http"), port), mux)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

// netE2EReader reads its rendered template (local/up.env: UPSTREAM and
// SECRET) every 100 ms, calls the upstream, and appends to $OUT/reader.log
// "ok <upstream> <secret> <answer>" or "err <upstream> <error>".
func netE2EReader() {
	out, err := os.OpenFile(filepath.Join(os.Getenv("OUT"), "reader.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(3)
	}
	hc := &http.Client{Timeout: time.Second}
	for range time.Tick(100 * time.Millisecond) {
		vals := map[string]string{}
		if f, err := os.Open(filepath.Join(os.Getenv("NOMAD_TASK_DIR"), "up.env")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					vals[k] = v
				}
			}
			f.Close()
		}
		up := vals["UPSTREAM"]
		if up == "" {
			continue
		}
		resp, err := hc.Get("http://" + up + "/")
		if err != nil {
			fmt.Fprintf(out, "err %s %v\n", up, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(out, "ok %s %s %s\n", up, vals["SECRET"], body)
	}
}

// TestServicesChecksTemplatesEndToEnd is the networking issue's
// acceptance run: three servers and two clients, all real agents over
// TCP; a job of two groups registered with Nomad's Go client. The web
// group's task (this binary) listens on a dynamic port behind a native
// service with an http check and check_restart; the client group's task
// reads a template rendering the service's address (nomadService) and a
// secret (nomadVar) and calls the server through it. The web task is made
// to fail its check: check_restart restarts it, its restart policy fails
// the allocation, the replacement gets another port, and the template
// renders the new address, through which the client reaches the server
// again.
func TestServicesChecksTemplatesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a five-agent cluster with real checks and reschedules")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()

	var servers []*Agent
	var rpcAddrs []string
	for i := 0; i < 3; i++ {
		cfg := DefaultConfig()
		cfg.NodeName = "s" + strconv.Itoa(i)
		cfg.DataDir = t.TempDir()
		cfg.BindAddr = "127.0.0.1"
		cfg.Ports = Ports{}
		cfg.Server.Enabled = true
		cfg.Server.BootstrapExpect = 3
		cfg.Server.RetryJoin = append([]string(nil), rpcAddrs...)
		cfg.serverConfigHook = func(sc *server.Config) {
			sc.RaftTimeoutScale = 0.25
			sc.RetryInterval = 50 * time.Millisecond
		}
		a, err := NewAgent(cfg, testLogger())
		if err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		servers = append(servers, a)
		rpcAddrs = append(rpcAddrs, a.RPCAddr())
	}
	var clients []*Agent
	for i := 0; i < 2; i++ {
		cfg := DefaultConfig()
		cfg.NodeName = "c" + strconv.Itoa(i)
		cfg.DataDir = t.TempDir()
		cfg.BindAddr = "127.0.0.1"
		cfg.Ports = Ports{}
		cfg.Client.Enabled = true
		cfg.Client.Servers = rpcAddrs
		cfg.Plugins[PluginRawExec] = &PluginConfig{Enabled: true}
		cfg.clientConfigHook = func(cc *client.Config) {
			cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
			cc.UpdateInterval = 50 * time.Millisecond
			cc.DestroyOnShutdown = true // the test's tasks end with it
		}
		a, err := NewAgent(cfg, testLogger())
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		clients = append(clients, a)
	}
	c := nomadClient(t, servers[0].HTTPURL(), "")
	pollUntil(t, "two ready nodes", 30*time.Second, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
			}
		}
		return err == nil && ready == 2
	})

	if _, _, err := c.Variables().Create(&nomad.Variable{Path: "nomad/jobs/e2e", Items: nomad.VariableItems{"password": "s3cret"}}, nil); err != nil {
		t.Fatalf("writing the variable: %v", err)
	}
	fail := &nomad.RestartPolicy{Attempts: new(0), Mode: new("fail")}
	quickReschedule := &nomad.ReschedulePolicy{Delay: new(time.Second), DelayFunction: new("constant"), Unlimited: new(true)}
	job := &nomad.Job{ID: new("e2e"), Datacenters: []string{"dc1"}, TaskGroups: []*nomad.TaskGroup{
		{
			Name:             new("web"),
			Networks:         []*nomad.NetworkResource{{DynamicPorts: []nomad.Port{{Label: "http"}}}},
			RestartPolicy:    fail,
			ReschedulePolicy: quickReschedule,
			Services: []*nomad.Service{{Name: "web", Provider: "nomad", PortLabel: "http",
				Checks: []nomad.ServiceCheck{{Name: "health", Type: "http", Path: "/health",
					Interval: time.Second, Timeout: time.Second,
					CheckRestart: &nomad.CheckRestart{Limit: 2, Grace: new(time.Second)}}}}},
			Tasks: []*nomad.Task{{Name: "server", Driver: "raw_exec",
				Config: map[string]any{"command": exe, "args": []string{"-test.run=^$"}},
				Env:    map[string]string{netE2EEnv: "server", "OUT": out}}},
		},
		{
			Name: new("client"),
			Tasks: []*nomad.Task{{Name: "reader", Driver: "raw_exec",
				Config: map[string]any{"command": exe, "args": []string{"-test.run=^$"}},
				Env:    map[string]string{netE2EEnv: "reader", "OUT": out},
				Templates: []*nomad.Template{{
					EmbeddedTmpl: new(`{{ range nomadService "web" }}UPSTREAM={{ .Address }}:{{ .Port }}{{ end }}
SECRET={{ with nomadVar "nomad/jobs/e2e" }}{{ .password }}{{ end }}
`),
					DestPath:   new("local/up.env"),
					ChangeMode: new("noop"),
				}}}},
		},
	}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register: %v", err)
	}

	// webAlloc returns the running web allocation other than not, with its
	// port, once there is one.
	webAlloc := func(not string) (string, int) {
		stubs, _, err := c.Jobs().Allocations("e2e", true, nil)
		if err != nil {
			return "", 0
		}
		for _, s := range stubs {
			if s.TaskGroup != "web" || s.ClientStatus != "running" || s.ID == not {
				continue
			}
			a, _, err := c.Allocations().Info(s.ID, nil)
			if err != nil || a.AllocatedResources == nil {
				continue
			}
			for _, p := range a.AllocatedResources.Shared.Ports {
				if p.Label == "http" {
					return a.ID, p.Value
				}
			}
		}
		return "", 0
	}
	readerSaw := func(port int) bool {
		b, _ := os.ReadFile(filepath.Join(out, "reader.log"))
		want := fmt.Sprintf("ok 127.0.0.1:%d s3cret hello from %d\n", port, port)
		return strings.Contains(string(b), want)
	}
	var first string
	var port1 int
	pollUntil(t, "the web allocation running", 60*time.Second, func() bool {
		first, port1 = webAlloc("")
		return first != ""
	})
	pollUntil(t, "the reader reaching the server through its template", 60*time.Second, func() bool { return readerSaw(port1) })
	regs, _, err := c.Services().Get("web", nil)
	if err != nil || len(regs) != 1 || regs[0].Port != port1 || regs[0].AllocID != first {
		t.Fatalf("service web: %+v, %v", regs, err)
	}
	pollUntil(t, "the check passing", 30*time.Second, func() bool {
		res, err := c.Allocations().Checks(first, nil)
		if err != nil {
			return false
		}
		for _, r := range res {
			if r.Status == "success" {
				return true
			}
		}
		return false
	})

	// The web task stops being healthy: its check fails, check_restart
	// restarts it, the restart policy (no attempts) fails the allocation,
	// and the reschedule places a replacement on another port.
	if err := os.WriteFile(filepath.Join(out, "stop-"+first), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "check_restart restarting the web task", 60*time.Second, func() bool {
		a, _, err := c.Allocations().Info(first, nil)
		if err != nil {
			return false
		}
		ts := a.TaskStates["server"]
		if ts == nil {
			return false
		}
		for _, ev := range ts.Events {
			if ev.Type == structs.TaskRestartSignal {
				return true
			}
		}
		return false
	})
	var second string
	var port2 int
	pollUntil(t, "a replacement web allocation running", 90*time.Second, func() bool {
		second, port2 = webAlloc(first)
		return second != ""
	})
	pollUntil(t, "the reader reaching the replacement through the re-rendered template", 60*time.Second,
		func() bool { return readerSaw(port2) })
	regs, _, err = c.Services().Get("web", nil)
	if err != nil || len(regs) != 1 || regs[0].AllocID != second || regs[0].Port != port2 {
		t.Fatalf("service web after the replacement: %+v, %v (want alloc %s port %d)", regs, err, second, port2)
	}
	t.Logf("web moved from %s:%d to %s:%d; the reader followed", first[:8], port1, second[:8], port2)
}

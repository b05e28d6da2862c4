package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// instanceStub is what the test reads of GET /v1/node/pool/<pool>/instances.
type instanceStub struct {
	ID, Type, State, StateReason, Behavior, NodeID string
}

type poolEvent struct {
	Type, InstanceID, Message string
}

// TestAutoscaledPoolLocalProvider is issue 21's done-when, on three real
// servers with the local provider (real `drover agent -client`
// processes, each behind a 2 s start delay so that boots are slow enough
// to kill the leader during one):
//   - an empty pool gets a queued job of 6 allocations of which 2 fit an
//     instance of the cheapest type: exactly 3 instances are created;
//   - the leader is SIGKILLed while they boot: the new leader adopts them
//     and creates none;
//   - the allocations run and the job ends; one instance is held: after
//     the idle timeout the other two agents are stopped, the held one
//     survives, and once set back to run it is stopped too;
//   - a simulated quota error stops creation for the back-off TTL while
//     the queue's longest wait grows, then creation resumes.
func TestAutoscaledPoolLocalProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base := t.TempDir()
	instDir := filepath.Join(base, "instances")
	wrapper := filepath.Join(base, "slow-drover")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nsleep 2\nexec "+droverBin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	clientExtra := "plugin \"mock_driver\" {\n  config {\n    enabled = true\n  }\n}\n"
	srvConf := filepath.Join(base, "server.hcl")
	conf := fmt.Sprintf(`server {
  min_heartbeat_ttl = "1s"
  heartbeat_grace = "2s"
  autoscale_interval = "200ms"
  autoscale_provider "local" {
    dir = %q
    binary = %q
    client_config = %q
  }
}
`, instDir, wrapper, clientExtra)
	if err := os.WriteFile(srvConf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	agents := startConfiguredCluster(t, base, srvConf)
	t.Cleanup(func() { killLocalInstances(t, instDir) })
	leader := waitLeader(t, agents, "", 30*time.Second)
	api := func() string {
		for _, a := range agents {
			if a.cmd != nil {
				return a.httpAddr
			}
		}
		t.Fatal("no live server")
		return ""
	}

	must(t, doJSON(http.MethodPut, api(), "/v1/node/pools", `{"Name":"burst"}`))
	must(t, doJSON(http.MethodPut, api(), "/v1/node/pool/burst/autoscaler", `{"Provider":"local","Enabled":true,"Max":5,
		"BootTimeout":60000000000,"IdleTimeout":4000000000,"QuotaBackoff":5000000000,
		"InstanceTypes":[{"Name":"small","CPU":1000,"MemoryMB":1024,"PricePerHour":0.1},
		                 {"Name":"medium","CPU":2000,"MemoryMB":2048,"PricePerHour":0.3}]}`))
	// Invalid configurations are refused, naming the field.
	if err := doJSON(http.MethodPut, api(), "/v1/node/pool/burst/autoscaler", `{"Provider":"local","Max":0,"InstanceTypes":[]}`); err == nil ||
		!strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Max") {
		t.Fatalf("invalid autoscaler: %v", err)
	}

	instances := func() []instanceStub {
		var out []instanceStub
		if _, err := getJSON(api(), "/v1/node/pool/burst/instances", &out); err != nil {
			return nil
		}
		return out
	}
	inState := func(list []instanceStub, states ...string) []instanceStub {
		var out []instanceStub
		for _, in := range list {
			for _, s := range states {
				if in.State == s {
					out = append(out, in)
				}
			}
		}
		return out
	}
	events := func() []poolEvent {
		var out struct{ Status struct{ Events []poolEvent } }
		if _, err := getJSON(api(), "/v1/node/pool/burst/autoscaler", &out); err != nil {
			return nil
		}
		return out.Status.Events
	}
	hasEvent := func(typ, substr string) bool {
		for _, e := range events() {
			if e.Type == typ && strings.Contains(e.Message, substr) {
				return true
			}
		}
		return false
	}

	// Six allocations of 500 MHz and 512 MB: small holds 2 (3 × 0.1)
	// against medium's 4 (2 × 0.3).
	job := `{"Job":{"ID":"burst-work","Type":"batch","NodePool":"burst","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":6,` +
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{"run_for":"3s"},"Resources":{"CPU":500,"MemoryMB":512}}]}]}}`
	must(t, doJSON(http.MethodPost, api(), "/v1/jobs", job))
	var created []instanceStub
	// Kill once the three are created: recorded booting, and their
	// agents started (each waits 2 s before it runs drover).
	waitUntil(t, 20*time.Second, "3 booting instances, their agents started", func() bool {
		created = instances()
		return len(inState(created, "booting")) == 3 && liveLocalInstances(instDir) == 3
	})
	for _, in := range created {
		if in.Type != "small" {
			t.Fatalf("instance %+v: want the cheapest fitting type, small", in)
		}
	}
	// SIGKILL the leader while they boot (the agents wait 2 s to start).
	for _, a := range agents {
		if a.rpcAddr == leader {
			a.kill()
		}
	}
	newLeader := waitLeader(t, agents, leader, 30*time.Second)
	t.Logf("leader %s SIGKILLed with 3 instances booting; new leader %s", leader, newLeader)
	waitUntil(t, 30*time.Second, "the new leader's adoption events", func() bool {
		return hasEvent("adopt", "adopted (not created again)")
	})
	waitUntil(t, 40*time.Second, "3 booted instances", func() bool {
		list := instances()
		return len(inState(list, "running", "idle")) == 3
	})
	if list := instances(); len(list) != 3 {
		t.Fatalf("instances after the failover: %+v; want the 3 adopted, none created", list)
	}
	// Hold one while the job runs.
	var held instanceStub
	for _, in := range instances() {
		if in.NodeID != "" {
			held = in
			break
		}
	}
	must(t, doJSON(http.MethodPut, api(), "/v1/node/pool/burst/instance/"+held.ID, `{"Behavior":"hold"}`))
	waitUntil(t, 20*time.Second, "the held instance's node ineligible", func() bool {
		var n struct{ SchedulingEligibility string }
		_, err := getJSON(api(), "/v1/node/"+held.NodeID, &n)
		return err == nil && n.SchedulingEligibility == "ineligible"
	})
	waitUntil(t, 40*time.Second, "the job's 6 allocations complete", func() bool {
		var allocs []allocStub
		if _, err := getJSON(api(), "/v1/job/burst-work/allocations", &allocs); err != nil {
			return false
		}
		done := 0
		for _, a := range allocs {
			if a.ClientStatus == "complete" {
				done++
			}
		}
		return done == 6
	})
	// After the idle timeout the two others are stopped; the held one
	// survives it.
	waitUntil(t, 30*time.Second, "the two idle instances stopped", func() bool {
		return len(inState(instances(), "gone")) == 2
	})
	time.Sleep(5 * time.Second) // beyond the held one's idle timeout
	list := instances()
	for _, in := range list {
		if in.ID == held.ID && (in.State != "idle" || in.Behavior != "hold") {
			t.Fatalf("held instance %+v", in)
		}
		if in.ID != held.ID && in.State != "gone" {
			t.Fatalf("instance %+v not stopped", in)
		}
	}
	if n := liveLocalInstances(instDir); n != 1 {
		t.Fatalf("%d client agents live, want the held one", n)
	}
	must(t, doJSON(http.MethodPut, api(), "/v1/node/pool/burst/instance/"+held.ID, `{"Behavior":"run"}`))
	waitUntil(t, 30*time.Second, "the released instance stopped", func() bool {
		return len(inState(instances(), "gone")) == 3 && liveLocalInstances(instDir) == 0
	})
	if !hasEvent("destroy", "idle for") {
		t.Fatalf("no idle destroy event: %+v", events())
	}

	// A quota error: nothing is created for the back-off TTL while the
	// queue's longest wait grows; then creation resumes.
	must(t, os.WriteFile(filepath.Join(instDir, "QUOTA_EXCEEDED"), nil, 0o644))
	job2 := strings.ReplaceAll(strings.ReplaceAll(job, "burst-work", "burst-two"), `"Count":6`, `"Count":2`)
	must(t, doJSON(http.MethodPost, api(), "/v1/jobs", job2))
	waitUntil(t, 20*time.Second, "a quota event", func() bool { return hasEvent("quota", "no create until") })
	quotaAt := time.Now()
	must(t, os.Remove(filepath.Join(instDir, "QUOTA_EXCEEDED")))
	longest := func() float64 {
		var q struct{ LongestWaitSeconds float64 }
		if _, err := getJSON(api(), "/v1/operator/queue", &q); err != nil {
			t.Fatal(err)
		}
		return q.LongestWaitSeconds
	}
	w1 := longest()
	time.Sleep(2 * time.Second)
	w2 := longest()
	if w2 <= w1 || w2 < 2 {
		t.Fatalf("longest wait %.1fs then %.1fs: want it growing during the back-off", w1, w2)
	}
	if booting := inState(instances(), "booting", "running", "idle"); len(booting) != 0 && time.Since(quotaAt) < 4*time.Second {
		t.Fatalf("instances created during the quota back-off: %+v", booting)
	}
	var resumed []instanceStub
	waitUntil(t, 30*time.Second, "creation after the back-off", func() bool {
		resumed = inState(instances(), "booting", "running", "idle")
		return len(resumed) == 1
	})
	if since := time.Since(quotaAt); since < 3*time.Second {
		t.Fatalf("created %s after the quota error, within its 5s back-off", since)
	}

	// The leader's Prometheus output has the pool's figures, with HELP.
	var leaderHTTP string
	for _, a := range agents {
		if a.rpcAddr == newLeader {
			leaderHTTP = a.httpAddr
		}
	}
	var prom string
	waitUntil(t, 20*time.Second, "the autoscaler's metrics on the leader", func() bool {
		resp, err := httpClient.Get("http://" + leaderHTTP + "/v1/metrics?format=prometheus")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		prom = string(b)
		for _, want := range []string{"# HELP drover_autoscaler_instances Autoscaled instances",
			`drover_autoscaler_instances{pool="burst",state="gone",type="small"}`, "# HELP drover_autoscaler_price_per_hour",
			`drover_autoscaler_quota_errors{pool="burst"} 1`, "drover_autoscaler_boot_seconds", "drover_autoscaler_creates{"} {
			if !strings.Contains(prom, want) {
				return false
			}
		}
		return true
	})
}

// startConfiguredCluster starts three servers that join each other, each
// with the config file conf, their data and logs under base.
func startConfiguredCluster(t *testing.T, base, conf string) []*agent {
	t.Helper()
	return startClusterIn(t, base, "-config", conf)
}

// localInstancePIDs returns the pids of the local provider's instances.
func localInstancePIDs(dir string) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
			out[e.Name()] = pid
		}
	}
	return out
}

// liveLocalInstances counts the local instances whose agent runs.
func liveLocalInstances(dir string) int {
	n := 0
	for name, pid := range localInstancePIDs(dir) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmdline), filepath.Join(dir, name)) {
			n++
		}
	}
	return n
}

// killLocalInstances SIGKILLs whatever the local provider left running
// (its agents outlive the servers by design), logging their tails on
// failure.
func killLocalInstances(t *testing.T, dir string) {
	for name, pid := range localInstancePIDs(dir) {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, name, "agent.log"))
			t.Logf("--- instance %s log (tail) ---\n%s", name, tail(string(b), 20))
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmdline), filepath.Join(dir, name)) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// doJSON sends body with method and fails on a status other than 200.
func doJSON(method, addr, path, body string) error {
	req, err := http.NewRequest(method, "http://"+addr+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return nil
}

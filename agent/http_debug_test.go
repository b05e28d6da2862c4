package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/hashicorp/go-hclog"
)

// debugHandler is the API handler with enable_debug set as given.
func debugHandler(on bool) http.Handler {
	cfg := DefaultConfig()
	cfg.EnableDebug = on
	return NewHTTPHandler(newFake(), cfg, hclog.NewNullLogger())
}

// With enable_debug every pprof handler answers; without it each is an
// unknown path (404), like any other.
func TestDebugPprofRoutes(t *testing.T) {
	paths := []struct{ method, target string }{
		{"GET", "/debug/pprof/"},
		{"GET", "/debug/pprof/cmdline"},
		{"GET", "/debug/pprof/symbol"},
		{"POST", "/debug/pprof/symbol"},
		{"GET", "/debug/pprof/trace?seconds=0.05"},
		{"GET", "/debug/pprof/profile?seconds=1"},
		{"GET", "/debug/pprof/heap"},
		{"GET", "/debug/pprof/goroutine?debug=1"},
		{"GET", "/debug/pprof/mutex"},
		{"GET", "/debug/pprof/block"},
		{"GET", "/debug/pprof/allocs"},
		{"GET", "/debug/pprof/threadcreate"},
	}
	on, off := debugHandler(true), debugHandler(false)
	for _, p := range paths {
		t.Run(p.method+" "+p.target, func(t *testing.T) {
			if rec := do(t, on, p.method, p.target, ""); rec.Code != http.StatusOK || rec.Body.Len() == 0 {
				t.Fatalf("enable_debug: status %d, %d bytes: %.200s", rec.Code, rec.Body.Len(), rec.Body.String())
			}
			if p.target == "/debug/pprof/profile?seconds=1" {
				return // the 404 below is the same for every path; skip a second CPU profile
			}
			if rec := do(t, off, p.method, p.target, ""); rec.Code != http.StatusNotFound {
				t.Fatalf("without enable_debug: status %d: %.200s", rec.Code, rec.Body.String())
			}
		})
	}

	t.Run("heap is a gzipped profile", func(t *testing.T) {
		body := do(t, on, "GET", "/debug/pprof/heap", "").Body.Bytes()
		if !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
			t.Fatalf("heap profile starts %x", body[:min(len(body), 8)])
		}
	})
	t.Run("index lists the named profiles", func(t *testing.T) {
		body := do(t, on, "GET", "/debug/pprof/", "").Body.String()
		for _, name := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"} {
			if !strings.Contains(body, name) {
				t.Errorf("index does not list %s", name)
			}
		}
	})
	t.Run("unknown profile", func(t *testing.T) {
		if rec := do(t, on, "GET", "/debug/pprof/nosuch", ""); rec.Code != http.StatusNotFound {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("the API still answers", func(t *testing.T) {
		if rec := do(t, on, "GET", "/v1/status/leader", ""); rec.Code != http.StatusOK && rec.Code != http.StatusInternalServerError {
			t.Fatalf("status %d", rec.Code)
		}
		if rec := do(t, on, "GET", "/v1/nosuch", ""); rec.Code != http.StatusNotFound {
			t.Fatalf("unknown API path: status %d", rec.Code)
		}
		if rec := do(t, on, "GET", "/v1/agent/pprof/heap", ""); rec.Code != http.StatusNotImplemented ||
			!strings.Contains(rec.Body.String(), "/debug/pprof/") {
			t.Fatalf("Nomad's agent pprof API: status %d %q", rec.Code, rec.Body.String())
		}
	})
}

func TestEnableProfiling(t *testing.T) {
	prev := runtime.SetMutexProfileFraction(-1)
	first := enableProfiling()
	second := enableProfiling()
	if got := runtime.SetMutexProfileFraction(-1); got != DebugMutexProfileFraction {
		t.Fatalf("mutex fraction %d, want %d", got, DebugMutexProfileFraction)
	}
	first()
	first() // a second call does nothing
	if got := runtime.SetMutexProfileFraction(-1); got != DebugMutexProfileFraction {
		t.Fatalf("after one of two releases: mutex fraction %d, want %d", got, DebugMutexProfileFraction)
	}
	second()
	if got := runtime.SetMutexProfileFraction(-1); got != prev {
		t.Fatalf("after the last release: mutex fraction %d, want %d", got, prev)
	}
}

// An agent's GC and debug settings reach the server and client
// configurations, the profiling rates and the HTTP server.
func TestAgentGCAndDebugWiring(t *testing.T) {
	prevMutex := runtime.SetMutexProfileFraction(-1)
	cfg := DevConfig()
	cfg.Ports = Ports{}
	cfg.NodeName = "dbg"
	cfg.Server.JobGCInterval = 7 * time.Minute
	cfg.Server.EvalGCThreshold = 2 * time.Hour
	cfg.Server.JobGCThreshold = 3 * time.Hour
	cfg.Server.NodeGCThreshold = 36 * time.Hour
	cfg.Server.DeploymentGCThreshold = 90 * time.Minute
	cfg.Client.GCInterval = 45 * time.Second
	cfg.Client.GCRetention = 20 * time.Minute
	cfg.Client.GCMaxAllocs = 9
	var gotServer server.DrainGCConfig
	var gotClient client.Config
	cfg.serverConfigHook = func(sc *server.Config) {
		sc.RaftTimeoutScale = 0.1
		gotServer = sc.DrainGC
	}
	cfg.clientConfigHook = func(cc *client.Config) { gotClient = *cc }
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()

	wantServer := server.DrainGCConfig{GCInterval: 7 * time.Minute, EvalGCThreshold: 2 * time.Hour,
		JobGCThreshold: 3 * time.Hour, NodeGCThreshold: 36 * time.Hour, DeploymentGCThreshold: 90 * time.Minute}
	if gotServer != wantServer {
		t.Errorf("server DrainGC = %+v, want %+v", gotServer, wantServer)
	}
	if gotClient.GCInterval != 45*time.Second || gotClient.GCRetention != 20*time.Minute || gotClient.GCMaxAllocs != 9 {
		t.Errorf("client GC = %s, %s, %d", gotClient.GCInterval, gotClient.GCRetention, gotClient.GCMaxAllocs)
	}
	if got := runtime.SetMutexProfileFraction(-1); got != DebugMutexProfileFraction {
		t.Errorf("mutex profile fraction %d while running, want %d", got, DebugMutexProfileFraction)
	}

	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(a.HTTPURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	if code, body := get("/debug/pprof/heap"); code != http.StatusOK || len(body) == 0 {
		t.Errorf("heap: %d, %d bytes", code, len(body))
	}
	if code, body := get("/debug/pprof/trace?seconds=0.05"); code != http.StatusOK || len(body) == 0 {
		t.Errorf("trace: %d, %d bytes", code, len(body))
	}
	code, body := get("/v1/agent/self")
	var self struct{ Config map[string]any }
	if err := json.Unmarshal(body, &self); code != http.StatusOK || err != nil || self.Config["EnableDebug"] != true {
		t.Errorf("agent self: %d %v EnableDebug=%v", code, err, self.Config["EnableDebug"])
	}

	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if got := runtime.SetMutexProfileFraction(-1); got != prevMutex {
		t.Errorf("mutex profile fraction %d after shutdown, want %d", got, prevMutex)
	}
}

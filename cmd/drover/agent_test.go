package main

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent"
)

func TestAwaitShutdown(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		e, out, _ := testEnv(nil)
		sig := make(chan os.Signal, 2)
		sig <- syscall.SIGTERM
		called := false
		if code := awaitShutdown(e, sig, func() error { called = true; return nil }); code != 0 || !called {
			t.Fatalf("exit %d, shutdown called %v", code, called)
		}
		if !strings.Contains(out.String(), "Caught signal: terminated") || !strings.Contains(out.String(), "Shutdown complete") {
			t.Fatalf("stdout = %q", out)
		}
	})
	t.Run("shutdown error", func(t *testing.T) {
		e, _, errOut := testEnv(nil)
		sig := make(chan os.Signal, 1)
		sig <- os.Interrupt
		if code := awaitShutdown(e, sig, func() error { return errors.New("stuck") }); code != 1 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(errOut.String(), "stuck") {
			t.Fatalf("stderr = %q", errOut)
		}
	})
	t.Run("second signal forces exit", func(t *testing.T) {
		e, _, errOut := testEnv(nil)
		sig := make(chan os.Signal, 2)
		sig <- os.Interrupt
		release := make(chan struct{})
		defer close(release)
		started := make(chan struct{})
		shutdown := func() error {
			close(started)
			<-release // a shutdown that hangs
			return nil
		}
		go func() { <-started; sig <- os.Interrupt }()
		if code := awaitShutdown(e, sig, shutdown); code != 1 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(errOut.String(), "second signal") {
			t.Fatalf("stderr = %q", errOut)
		}
	})
}

// TestAgentCommand runs `drover agent -dev` in-process, talks to it with
// the other commands, and stops it with a signal.
func TestAgentCommand(t *testing.T) {
	e, out, errOut := testEnv(nil)
	sig := make(chan os.Signal, 2)
	e.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	started := make(chan *agent.Agent, 1)
	e.agentStarted = func(a *agent.Agent) { started <- a }
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"agent", "-dev", "-http-port", "0", "-rpc-port", "0", "-log-level", "warn", "-node", "cli1"}, e)
	}()

	var a *agent.Agent
	select {
	case a = <-started:
	case code := <-done:
		t.Fatalf("agent exited with %d: %s", code, errOut)
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not start")
	}
	if !strings.Contains(out.String(), "Drover agent started") || !strings.Contains(out.String(), a.HTTPURL()) {
		t.Fatalf("banner: %s", out)
	}
	// -dev turns enable_debug on, as Nomad's dev agent: pprof is served.
	if !strings.Contains(out.String(), a.HTTPURL()+"/debug/pprof/") {
		t.Fatalf("banner does not show the pprof address: %s", out)
	}
	resp, err := http.Get(a.HTTPURL() + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/pprof/heap on a -dev agent: %s", resp.Status)
	}

	deadline := time.Now().Add(15 * time.Second)
	for {
		se, sout, _ := testEnv(nil)
		if run([]string{"status", "-address", a.HTTPURL()}, se) == 0 && !strings.Contains(sout.String(), "(none)") {
			if !strings.Contains(sout.String(), "Leader  "+a.RPCAddr()) {
				t.Fatalf("status output: %s", sout)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(50 * time.Millisecond)
	}

	le, lout, lerr := testEnv(map[string]string{"DROVER_ADDR": a.HTTPURL()})
	if code := run([]string{"operator", "raft", "list-peers"}, le); code != 0 {
		t.Fatalf("list-peers exit %d: %s", code, lerr)
	}
	lines := strings.Split(strings.TrimSpace(lout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "Node ") || !strings.Contains(lines[1], a.RPCAddr()) ||
		!strings.Contains(lines[1], "leader") || !strings.Contains(lines[1], "true") {
		t.Fatalf("list-peers output:\n%s", lout)
	}

	// The only server already leads: a transfer to it does nothing.
	te, tout, terr := testEnv(map[string]string{"DROVER_ADDR": a.HTTPURL()})
	if code := run([]string{"operator", "raft", "transfer-leadership", "-peer-address", a.RPCAddr()}, te); code != 0 {
		t.Fatalf("transfer-leadership exit %d: %s", code, terr)
	}
	if !strings.Contains(tout.String(), "already leads; nothing was transferred") {
		t.Fatalf("transfer-leadership output:\n%s", tout)
	}
	te, _, terr = testEnv(map[string]string{"DROVER_ADDR": a.HTTPURL()})
	if code := run([]string{"operator", "raft", "transfer-leadership", "-peer-id", "nobody"}, te); code != 1 ||
		!strings.Contains(terr.String(), `no raft peer with ID "nobody"`) {
		t.Fatalf("transfer-leadership to nobody: exit %d: %s", code, terr)
	}

	qe, qout, qerr := testEnv(map[string]string{"DROVER_ADDR": a.HTTPURL()})
	if code := run([]string{"operator", "queue"}, qe); code != 0 {
		t.Fatalf("operator queue exit %d: %s", code, qerr)
	}
	if !strings.Contains(qout.String(), "Placed, not started = 0") || !strings.Contains(qout.String(), "Blocked evaluations = 0") {
		t.Fatalf("operator queue output:\n%s", qout)
	}

	dataDir := a.DataDir()
	sig <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("agent exit %d: %s", code, errOut)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not stop")
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("dev data dir %q left behind: %v", dataDir, err)
	}
}

package client

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// registrationsOf returns the nodes f saw registered, in order.
func (f *fakeCluster) registrationsOf(id string) []*structs.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*structs.Node
	for _, n := range f.registrations {
		if n.ID == id {
			out = append(out, n)
		}
	}
	return out
}

// TestReadinessNoBlockRegistersReady: a client without a readiness block
// whose drivers are healthy registers ready at once: the common path adds
// no round trip.
func TestReadinessNoBlockRegistersReady(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return len(f.registrationsOf(c.NodeID())) > 0 })
	first := f.registrationsOf(c.NodeID())[0]
	if first.Status != structs.NodeStatusReady || first.Readiness == nil || !first.Readiness.Passed || first.Readiness.Command {
		t.Fatalf("first registration: status %q readiness %+v", first.Status, first.Readiness)
	}
	if r := c.Readiness(); !r.Passed {
		t.Fatalf("client readiness %+v", r)
	}
}

// TestReadinessWaitsForHealthyDriver: a node with no healthy driver
// registers initializing with the reason and a node event, and becomes
// ready once a driver fingerprints healthy.
func TestReadinessWaitsForHealthyDriver(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c, err := New(&Config{
		DataDir: t.TempDir(), Servers: []string{"s1:4647"}, Transport: f, NodeName: "n", RawExecEnabled: true,
		NetworkAddr: "127.0.0.1", RetryBase: 10 * time.Millisecond, RetryLimit: 50 * time.Millisecond,
		DriverFingerprintInterval: 300 * time.Millisecond,
		// The first fingerprint finds every driver unhealthy; the next one
		// (300 ms later) the real state.
		fingerprintHook: func(n *structs.Node) {
			for _, d := range n.Drivers {
				d.Healthy = false
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)
	waitFor(t, "ready", 10*time.Second, func() bool {
		n := f.node(c.NodeID())
		return n != nil && n.Status == structs.NodeStatusReady
	})
	regs := f.registrationsOf(c.NodeID())
	if regs[0].Status != structs.NodeStatusInit {
		t.Fatalf("first registration status %q", regs[0].Status)
	}
	var sawEvent, sawReason bool
	for _, n := range regs {
		for _, e := range n.Events {
			sawEvent = sawEvent || (e.Message == readinessFailedPrefix+msgNoHealthyDriver && e.Subsystem == readinessEventSubsystem)
		}
		sawReason = sawReason || (n.Status == structs.NodeStatusInit && n.StatusDescription == msgNoHealthyDriver &&
			n.Readiness != nil && !n.Readiness.Passed && n.Readiness.Message == msgNoHealthyDriver)
	}
	if !sawEvent || !sawReason {
		t.Fatalf("no registration reported %q (event %v, reason %v)", msgNoHealthyDriver, sawEvent, sawReason)
	}
	last := regs[len(regs)-1]
	if last.StatusDescription != "" || last.Readiness == nil || !last.Readiness.Passed || len(last.Events) != 0 {
		t.Fatalf("last registration: %q %+v events %d", last.StatusDescription, last.Readiness, len(last.Events))
	}
}

// TestReadinessCommandTimeout: a command that runs past its timeout
// fails, and its process group (a child of the shell too) is killed.
func TestReadinessCommandTimeout(t *testing.T) {
	marker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	start := time.Now()
	rc := &ReadinessConfig{Command: "/bin/sh", Args: []string{"-c", "echo starting; sleep " + marker + "; true"}, Timeout: 300 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), rc.Timeout)
	defer cancel()
	ok, msg := runReadinessCommand(ctx, rc)
	if took := time.Since(start); ok || took > 3*time.Second {
		t.Fatalf("ok %v after %s", ok, took)
	}
	if msg != "timed out after 300ms: starting" {
		t.Fatalf("message %q", msg)
	}
	waitFor(t, "the shell's child killed", 3*time.Second, func() bool { return len(procsWithArgs("sleep", marker)) == 0 })
}

// TestReadinessCommandFailure: the failure names the exit status and
// keeps the tail of the output.
func TestReadinessCommandFailure(t *testing.T) {
	rc := &ReadinessConfig{Command: "/bin/sh", Args: []string{"-c", "printf '%0400d' 0; echo ' disk not mounted' >&2; exit 3"}, Timeout: 5 * time.Second}
	ok, msg := runReadinessCommand(context.Background(), rc)
	if ok || !strings.HasPrefix(msg, "exit status 3: ") || !strings.HasSuffix(msg, "0 disk not mounted") {
		t.Fatalf("ok %v message %q", ok, msg)
	}
	if len(msg) > len("exit status 3: ")+readinessOutputTail {
		t.Fatalf("message keeps %d bytes", len(msg))
	}
	if ok, msg := runReadinessCommand(context.Background(), &ReadinessConfig{Command: "/nonexistent/check", Timeout: time.Second}); ok || !strings.Contains(msg, "/nonexistent/check") {
		t.Fatalf("missing command: ok %v message %q", ok, msg)
	}
	if ok, msg := runReadinessCommand(context.Background(), &ReadinessConfig{Command: "/bin/true", Timeout: time.Second}); !ok || msg != "" {
		t.Fatalf("/bin/true: ok %v message %q", ok, msg)
	}
}

// TestReadinessRecheck: with recheck, a failure after the node was ready
// makes it initializing again (with the event), and a pass ready again.
func TestReadinessRecheck(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	flag := filepath.Join(t.TempDir(), "ok")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(&Config{
		DataDir: t.TempDir(), Servers: []string{"s1:4647"}, Transport: f, NodeName: "n", RawExecEnabled: true,
		NetworkAddr: "127.0.0.1", RetryBase: 10 * time.Millisecond, RetryLimit: 50 * time.Millisecond,
		Readiness: &ReadinessConfig{Command: "/bin/test", Args: []string{"-f", flag},
			Interval: 100 * time.Millisecond, Timeout: 2 * time.Second, Recheck: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)
	status := func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		if n := f.nodes[c.NodeID()]; n != nil {
			return n.Status
		}
		return ""
	}
	waitFor(t, "ready", 5*time.Second, func() bool { return status() == structs.NodeStatusReady })
	if regs := f.registrationsOf(c.NodeID()); regs[0].Status != structs.NodeStatusInit || !regs[0].Readiness.Command {
		t.Fatalf("first registration %q %+v", regs[0].Status, regs[0].Readiness)
	}
	if ok, msg := c.ProbeReadiness(); !ok || msg != "" {
		t.Fatalf("probe: %v %q", ok, msg)
	}
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	if ok, msg := c.ProbeReadiness(); ok || msg != "exit status 1" {
		t.Fatalf("probe without the file: %v %q", ok, msg)
	}
	waitFor(t, "initializing again", 5*time.Second, func() bool { return status() == structs.NodeStatusInit })
	regs := f.registrationsOf(c.NodeID())
	last := regs[len(regs)-1]
	if len(last.Events) != 1 || last.Events[0].Message != readinessFailedPrefix+"exit status 1" {
		t.Fatalf("events %+v", last.Events)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ready again", 5*time.Second, func() bool { return status() == structs.NodeStatusReady })
}

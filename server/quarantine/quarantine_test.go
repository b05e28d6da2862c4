package quarantine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// world is a state store with nodes, written as the FSM would.
type world struct {
	t  *testing.T
	st *state.StateStore

	mu    sync.Mutex
	index uint64 // guarded by mu
}

func newWorld(t *testing.T, nodes ...string) *world {
	t.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, st: st}
	for _, id := range nodes {
		n := mock.Node()
		n.ID, n.Name = id, id
		n.Status = structs.NodeStatusReady
		n.Drivers = map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}
		if err := st.UpsertNode(w.next(), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *world) next() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	return w.index
}

// UpdateQuarantine applies a write as the FSM would.
func (w *world) UpdateQuarantine(req *structs.NodeQuarantineUpdateRequest) error {
	return w.st.UpdateNodeQuarantine(w.next(), req)
}

func (w *world) node(id string) *structs.Node {
	w.t.Helper()
	n, err := w.st.NodeByID(nil, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *world) row(id string) *structs.NodeQuarantine {
	q, err := w.st.NodeQuarantineByID(nil, id)
	if errors.Is(err, structs.ErrNotFound) {
		return nil
	} else if err != nil {
		w.t.Fatal(err)
	}
	return q
}

func (w *world) lastEvent(id string) *structs.NodeEvent {
	ev := w.node(id).Events
	if len(ev) == 0 {
		return nil
	}
	return ev[len(ev)-1]
}

func fault(node, kind string, at time.Time) *structs.NodeFault {
	return &structs.NodeFault{NodeID: node, Kind: kind, AllocID: "a", Time: at}
}

// plan runs Plan at now and applies its writes.
func (w *world) plan(now time.Time, probe func(*structs.Node) error, faults ...*structs.NodeFault) *Pass {
	w.t.Helper()
	if probe == nil {
		probe = func(n *structs.Node) error { return Probe(ProbeInput{Node: n, Heartbeating: true}) }
	}
	p, err := Plan(w.st, nil, now, faults, Policy{}, probe)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, req := range p.Writes {
		if err := w.UpdateQuarantine(req); err != nil {
			w.t.Fatal(err)
		}
	}
	return p
}

// TestPlanThreshold: faults below the threshold are recorded; the third
// within the window quarantines the node: ineligible, a marked event, a
// probe due after the cool-down.
func TestPlanThreshold(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	p := w.plan(t0, nil, fault("n1", structs.NodeFaultDriverStart, t0), fault("n2", structs.NodeFaultSetup, t0))
	if len(p.Quarantined) != 0 || len(w.row("n1").Faults) != 1 || w.node("n1").SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatalf("one fault: %+v", p)
	}
	if !p.NextDeadline.Equal(t0.Add(DefaultWindow)) {
		t.Fatalf("next deadline %v, want the first fault leaving the window", p.NextDeadline)
	}
	w.plan(t0.Add(time.Minute), nil, fault("n1", structs.NodeFaultSetup, t0.Add(time.Minute)))
	p = w.plan(t0.Add(2*time.Minute), nil, fault("n1", structs.NodeFaultHeartbeat, time.Time{}))
	if len(p.Quarantined) != 1 || p.Quarantined[0] != "n1" {
		t.Fatalf("third fault: %+v", p)
	}
	q, n, ev := w.row("n1"), w.node("n1"), w.lastEvent("n1")
	if !q.Quarantined || !q.ProbeAt.Equal(t0.Add(2*time.Minute+DefaultCooldown)) || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("quarantine: row %+v node %s", q, n.SchedulingEligibility)
	}
	if ev.Subsystem != EventSubsystem || ev.Details[DetailQuarantine] != "true" || !strings.HasPrefix(ev.Message, EventQuarantined) ||
		!strings.Contains(ev.Message, "driver-start: 1, heartbeat-flap: 1, setup: 1") {
		t.Fatalf("event: %+v", ev)
	}
	if !q.Faults[2].Time.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("a fault without a time takes the leader's: %v", q.Faults[2].Time)
	}
	if w.node("n2").SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatal("n2 quarantined with one fault")
	}
}

// TestPlanWindowSlides: faults that left the window no longer count, and
// are dropped from the row once they leave it.
func TestPlanWindowSlides(t *testing.T) {
	w := newWorld(t, "n1")
	w.plan(t0, nil, fault("n1", structs.NodeFaultSetup, t0))
	w.plan(t0.Add(6*time.Minute), nil, fault("n1", structs.NodeFaultSetup, t0.Add(6*time.Minute)))
	// The first leaves the window at t0+10m: a pass then drops it.
	p := w.plan(t0.Add(10*time.Minute), nil)
	if len(p.Writes) != 1 || len(w.row("n1").Faults) != 1 {
		t.Fatalf("expired fault kept: %+v %+v", p, w.row("n1"))
	}
	p = w.plan(t0.Add(11*time.Minute), nil, fault("n1", structs.NodeFaultSetup, t0.Add(11*time.Minute)))
	if len(p.Quarantined) != 0 || w.node("n1").SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatalf("quarantined on a fault outside the window: %+v", p)
	}
	// Both remaining faults leave the window: the row goes.
	w.plan(t0.Add(30*time.Minute), nil)
	if q := w.row("n1"); q != nil {
		t.Fatalf("row of a node without faults: %+v", q)
	}
}

// TestPlanIgnoresJobFailures: only the node fault kinds count; anything
// else (a task's own exit has no kind) is never recorded.
func TestPlanIgnoresJobFailures(t *testing.T) {
	w := newWorld(t, "n1")
	for i := 0; i < 5; i++ {
		w.plan(t0, nil, fault("n1", "", t0), fault("n1", "exit-code", t0), fault("gone", structs.NodeFaultSetup, t0))
	}
	if q := w.row("n1"); q != nil && len(q.Faults) > 0 {
		t.Fatalf("job failures counted: %+v", q)
	}
	if w.node("n1").SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatal("quarantined")
	}
}

// TestPlanLeavesOperatorNodes: a node an operator made ineligible, or
// drains, is never quarantined (a quarantine would later make it
// eligible); its faults are still recorded.
func TestPlanLeavesOperatorNodes(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	if err := w.st.UpdateNodeEligibility(w.next(), &structs.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: structs.NodeSchedulingIneligible}); err != nil {
		t.Fatal(err)
	}
	if err := w.st.UpdateNodeDrain(w.next(), &structs.NodeUpdateDrainRequest{NodeID: "n2", DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	var fs []*structs.NodeFault
	for i := 0; i < 4; i++ {
		fs = append(fs, fault("n1", structs.NodeFaultSetup, t0), fault("n2", structs.NodeFaultSetup, t0))
	}
	p := w.plan(t0, nil, fs...)
	if len(p.Quarantined) != 0 || w.row("n1").Quarantined || len(w.row("n2").Faults) != 4 {
		t.Fatalf("operator's nodes: %+v", p)
	}
}

// TestPlanProbe: no probe before ProbeAt; a failed probe keeps the
// quarantine for another cool-down, with an event; a passed one lifts it:
// eligible, the row gone, "Quarantine lifted".
func TestPlanProbe(t *testing.T) {
	w := newWorld(t, "n1")
	w.plan(t0, nil, fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0))
	probed := 0
	failing := func(*structs.Node) error { probed++; return errors.New("drivers unhealthy: [raw_exec]") }
	if p := w.plan(t0.Add(DefaultCooldown-time.Second), failing); len(p.Writes) != 0 || probed != 0 {
		t.Fatalf("probed before the cool-down: %+v", p)
	}
	p := w.plan(t0.Add(DefaultCooldown), failing)
	q := w.row("n1")
	if len(p.ProbeFailed) != 1 || q.Probes != 1 || !q.ProbeAt.Equal(t0.Add(2*DefaultCooldown)) || !q.Quarantined ||
		w.node("n1").SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("failed probe: %+v row %+v", p, q)
	}
	if ev := w.lastEvent("n1"); !strings.HasPrefix(ev.Message, EventProbeFailed) || ev.Details["probe_error"] == "" {
		t.Fatalf("failed probe event: %+v", ev)
	}
	if !p.NextDeadline.Equal(q.ProbeAt) {
		t.Fatalf("next deadline %v, want the next probe %v", p.NextDeadline, q.ProbeAt)
	}
	p = w.plan(t0.Add(2*DefaultCooldown), nil)
	if len(p.Lifted) != 1 || w.row("n1") != nil || w.node("n1").SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatalf("passed probe: %+v", p)
	}
	if ev := w.lastEvent("n1"); ev.Message != EventLifted || ev.Details[DetailQuarantine] != "false" {
		t.Fatalf("lift event: %+v", ev)
	}
	if !p.NextDeadline.IsZero() {
		t.Fatalf("deadline with nothing left: %v", p.NextDeadline)
	}
}

// TestProbe: the probe passes only for a ready, heartbeating node whose
// detected drivers are all healthy.
func TestProbe(t *testing.T) {
	ok := func() *structs.Node {
		return &structs.Node{ID: "n1", Status: structs.NodeStatusReady, Drivers: map[string]*structs.DriverInfo{
			"raw_exec": {Detected: true, Healthy: true}, "docker": {Detected: false}}}
	}
	if err := Probe(ProbeInput{Node: ok(), Heartbeating: true}); err != nil {
		t.Fatalf("healthy node: %v", err)
	}
	passed := ok()
	passed.Readiness = &structs.NodeReadiness{Passed: true}
	if err := Probe(ProbeInput{Node: passed, Heartbeating: true}); err != nil {
		t.Fatalf("healthy node whose readiness gate passed: %v", err)
	}
	for name, in := range map[string]ProbeInput{
		"gone":         {Heartbeating: true},
		"down":         {Node: func() *structs.Node { n := ok(); n.Status = structs.NodeStatusDown; return n }(), Heartbeating: true},
		"initializing": {Node: func() *structs.Node { n := ok(); n.Status = structs.NodeStatusInit; return n }(), Heartbeating: true},
		"draining":     {Node: func() *structs.Node { n := ok(); n.Drain = true; return n }(), Heartbeating: true},
		"no heartbeat": {Node: ok()},
		"readiness fails": {Node: func() *structs.Node {
			n := ok()
			n.Readiness = &structs.NodeReadiness{Passed: false, Message: "exit status 1", Command: true}
			return n
		}(), Heartbeating: true},
		"unhealthy drive": {Node: func() *structs.Node { n := ok(); n.Drivers["raw_exec"].Healthy = false; return n }(), Heartbeating: true},
	} {
		if err := Probe(in); err == nil {
			t.Errorf("%s: probe passed", name)
		}
	}
}

// harness runs a Watcher over a world with a manual clock.
type harness struct {
	w      *world
	clk    *clock.Manual
	wt     *Watcher
	passes chan *Pass
	stop   func()
}

func startWatcher(t *testing.T, w *world, clk *clock.Manual, hb func(string) bool) *harness {
	t.Helper()
	wt, err := New(Config{State: func() State { return w.st }, Writer: w, Clock: clk, Heartbeating: hb,
		MinInterval: -1, RetryBase: time.Millisecond, RetryLimit: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{w: w, clk: clk, wt: wt, passes: make(chan *Pass, 100)}
	wt.observe = func(p *Pass) { h.passes <- p }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		wt.Run(ctx)
	}()
	var once sync.Once
	h.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(h.stop)
	h.next(t) // the first pass: the watcher runs and takes reports now
	return h
}

func (h *harness) next(t *testing.T) *Pass {
	t.Helper()
	select {
	case p := <-h.passes:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no quarantine pass within 5s")
		return nil
	}
}

// armed waits until the watcher, parked after a pass, has armed its
// deadline timer on the manual clock (an Advance before that would pass
// unseen).
func (h *harness) armed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.clk.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no deadline timer armed")
		}
		time.Sleep(time.Millisecond)
	}
}

// advance moves the clock once the watcher is parked.
func (h *harness) advance(t *testing.T, d time.Duration) {
	t.Helper()
	h.armed(t)
	h.clk.Advance(d)
}

// until waits for passes until cond holds.
func (h *harness) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-h.passes:
		case <-deadline:
			t.Fatalf("timed out waiting for: %s", what)
		}
	}
}

// TestWatcherQuarantineAndProbe: reports reach the row; the threshold
// quarantines; the probe runs at the cool-down on the injected clock (no
// sleeping), fails while the node is not heartbeating, then lifts it.
func TestWatcherQuarantineAndProbe(t *testing.T) {
	w := newWorld(t, "n1")
	clk := clock.NewManual(t0)
	var hbMu sync.Mutex
	beating := true
	hb := func(string) bool { hbMu.Lock(); defer hbMu.Unlock(); return beating }
	h := startWatcher(t, w, clk, hb)
	for i := 0; i < 3; i++ {
		h.wt.Report(fault("n1", structs.NodeFaultDriverStart, clk.Now()))
	}
	h.until(t, "quarantine", func() bool { q := w.row("n1"); return q != nil && q.Quarantined })
	if w.node("n1").SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatal("quarantined node eligible")
	}
	hbMu.Lock()
	beating = false
	hbMu.Unlock()
	h.advance(t, DefaultCooldown)
	h.until(t, "failed probe", func() bool { q := w.row("n1"); return q != nil && q.Probes == 1 })
	hbMu.Lock()
	beating = true
	hbMu.Unlock()
	h.advance(t, DefaultCooldown-time.Second)
	if q := w.row("n1"); q == nil || !q.Quarantined {
		t.Fatal("lifted before the next cool-down")
	}
	h.advance(t, time.Second)
	h.until(t, "lift", func() bool { return w.row("n1") == nil })
	if n := w.node("n1"); n.SchedulingEligibility != structs.NodeSchedulingEligible || w.lastEvent("n1").Message != EventLifted {
		t.Fatalf("after the lift: %s %+v", n.SchedulingEligibility, w.lastEvent("n1"))
	}
}

// TestWatcherManualEnable: `node eligibility -enable` (an eligibility
// write) ends the quarantine: the row is gone, and the cool-down later
// neither probes nor changes the node.
func TestWatcherManualEnable(t *testing.T) {
	w := newWorld(t, "n1")
	clk := clock.NewManual(t0)
	h := startWatcher(t, w, clk, nil)
	h.wt.Report(fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0))
	h.until(t, "quarantine", func() bool { q := w.row("n1"); return q != nil && q.Quarantined })
	if err := w.st.UpdateNodeEligibility(w.next(), &structs.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: structs.NodeSchedulingEligible,
		NodeEvent: &structs.NodeEvent{Message: "Node marked as eligible", Subsystem: "Cluster"}}); err != nil {
		t.Fatal(err)
	}
	h.until(t, "row gone", func() bool { return w.row("n1") == nil })
	before := w.node("n1").ModifyIndex
	clk.Advance(DefaultCooldown)
	// A single new fault does not quarantine again: the counts were reset.
	h.wt.Report(fault("n1", structs.NodeFaultSetup, clk.Now()))
	h.until(t, "fault recorded", func() bool { q := w.row("n1"); return q != nil && len(q.Faults) == 1 })
	if n := w.node("n1"); n.SchedulingEligibility != structs.NodeSchedulingEligible || n.ModifyIndex != before {
		t.Fatalf("the watcher changed the node after a manual enable: %s %d/%d", n.SchedulingEligibility, n.ModifyIndex, before)
	}
}

// TestWatcherFailover: the counts and the quarantine live in the state,
// so a new leader's watcher carries on: faults recorded by the first are
// counted with the new one's, and the probe happens at the recorded time.
func TestWatcherFailover(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	clk := clock.NewManual(t0)
	a := startWatcher(t, w, clk, nil)
	a.wt.Report(fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0),
		fault("n2", structs.NodeFaultSetup, t0), fault("n2", structs.NodeFaultSetup, t0))
	a.until(t, "n1 quarantined, n2 counted", func() bool {
		q1, q2 := w.row("n1"), w.row("n2")
		return q1 != nil && q1.Quarantined && q2 != nil && len(q2.Faults) == 2
	})
	a.stop()                                             // leadership lost
	a.wt.Report(fault("n2", structs.NodeFaultSetup, t0)) // dropped: not running

	clk.Advance(time.Minute)
	b := startWatcher(t, w, clk, nil) // the new leader
	if q := w.row("n2"); len(q.Faults) != 2 {
		t.Fatalf("a report to a stopped watcher was recorded: %+v", q)
	}
	b.wt.Report(fault("n2", structs.NodeFaultDriverUnhealthy, clk.Now()))
	b.until(t, "n2 quarantined by the new leader", func() bool { q := w.row("n2"); return q != nil && q.Quarantined })
	b.advance(t, DefaultCooldown-time.Minute)
	b.until(t, "n1 lifted at its recorded probe time", func() bool { return w.row("n1") == nil })
	if q := w.row("n2"); q == nil || !q.Quarantined {
		t.Fatal("n2 lifted before its cool-down")
	}
}

// TestWatcherRetriesFailedWrite: a failed write loses no fault.
func TestWatcherRetriesFailedWrite(t *testing.T) {
	w := newWorld(t, "n1")
	fw := &failingWriter{w: w, fails: 2}
	clk := clock.NewManual(t0)
	wt, err := New(Config{State: func() State { return w.st }, Writer: fw, Clock: clk,
		MinInterval: -1, RetryBase: time.Millisecond, RetryLimit: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	passes := make(chan *Pass, 100)
	wt.observe = func(p *Pass) { passes <- p }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); wt.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-passes
	wt.Report(fault("n1", structs.NodeFaultSetup, t0), fault("n1", structs.NodeFaultSetup, t0))
	deadline := time.After(5 * time.Second)
	for {
		if q := w.row("n1"); q != nil && len(q.Faults) == 2 {
			return
		}
		select {
		case <-passes:
		case <-deadline:
			t.Fatalf("faults lost after failed writes: %+v", w.row("n1"))
		}
	}
}

type failingWriter struct {
	w     *world
	mu    sync.Mutex
	fails int // guarded by mu
}

func (f *failingWriter) UpdateQuarantine(req *structs.NodeQuarantineUpdateRequest) error {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return errors.New("injected write failure")
	}
	return f.w.UpdateQuarantine(req)
}

package quarantine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Defaults of Config fields left zero.
const (
	// DefaultMinInterval is the least time between two passes, so a burst
	// of reports costs one pass.
	DefaultMinInterval = 100 * time.Millisecond
	DefaultRetryBase   = 100 * time.Millisecond
	DefaultRetryLimit  = 10 * time.Second
	// DefaultMaxPending bounds the faults waiting for a pass; more are
	// dropped (with a log line): a node reporting that many is counted
	// well past any threshold already.
	DefaultMaxPending = 4096
)

// Metric names (Prometheus help in agent/metrics_help.go).
var (
	// MetricQuarantined counts quarantines.
	MetricQuarantined = []string{"drover", "quarantine", "quarantined"}
	// MetricLifted counts quarantines lifted by a passed probe.
	MetricLifted = []string{"drover", "quarantine", "lifted"}
	// MetricProbeFailed counts failed probes.
	MetricProbeFailed = []string{"drover", "quarantine", "probe_failed"}
	// MetricFaults counts node faults recorded, by kind (label kind).
	MetricFaults = []string{"drover", "quarantine", "faults"}
	// metricPass is the time of one pass.
	metricPass = []string{"drover", "quarantine", "pass"}
)

// Writer makes the watcher's decisions durable. The server implements it
// with a Raft apply of structs.NodeQuarantineUpdateRequestType; it returns
// once the write is applied locally, or fails having written nothing the
// watcher relies on (the next pass recomputes from state). When req makes
// the node eligible again, the writer adds the node's evaluations.
type Writer interface {
	UpdateQuarantine(req *structs.NodeQuarantineUpdateRequest) error
}

// State is a Reader that reports when it has been replaced (after a
// snapshot restore). *state.StateStore satisfies it.
type State interface {
	Reader
	AbandonCh() <-chan struct{}
}

// Config configures a Watcher. State and Writer are required.
type Config struct {
	Logger hclog.Logger
	// State returns the current state store; called once per pass.
	State  func() State
	Writer Writer
	// Clock is the source of time; nil means the wall clock.
	Clock  clock.Clock
	Policy Policy
	// Heartbeating reports whether the leader holds a live heartbeat
	// timer for a node (ProbeInput.Heartbeating); nil means always.
	Heartbeating func(nodeID string) bool
	// Probe replaces the package's Probe (tests); nil means Probe.
	Probe func(ProbeInput) error
	// MinInterval is the least time between passes: 0 means
	// DefaultMinInterval, negative none.
	MinInterval time.Duration
	// RetryBase and RetryLimit bound the backoff after a failed pass.
	RetryBase, RetryLimit time.Duration
	// MaxPending bounds the faults waiting for a pass (0: default).
	MaxPending int
}

// Watcher counts node faults and runs quarantines while Run runs. Report
// may be called at any time from any goroutine. Create with New.
type Watcher struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock
	wake   chan struct{}

	mu      sync.Mutex
	running bool                 // guarded by mu
	pending []*structs.NodeFault // guarded by mu

	// observe, if set (tests), sees every pass that succeeded.
	observe func(*Pass)
}

// New returns a watcher; it does nothing until Run.
func New(cfg Config) (*Watcher, error) {
	if cfg.State == nil || cfg.Writer == nil {
		return nil, errors.New("quarantine: State and Writer are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.MinInterval == 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.Probe == nil {
		cfg.Probe = Probe
	}
	cfg.Policy = cfg.Policy.withDefaults()
	cfg.RetryBase = cmp.Or(cfg.RetryBase, DefaultRetryBase)
	cfg.RetryLimit = cmp.Or(cfg.RetryLimit, DefaultRetryLimit)
	cfg.MaxPending = cmp.Or(cfg.MaxPending, DefaultMaxPending)
	return &Watcher{cfg: cfg, logger: cfg.Logger.Named("quarantine"), clock: cfg.Clock, wake: make(chan struct{}, 1)}, nil
}

// Report hands node faults to the watcher, for its next pass. It never
// blocks. Faults reported while the watcher is not running (this server is
// not the leader) are dropped.
func (w *Watcher) Report(faults ...*structs.NodeFault) {
	if len(faults) == 0 {
		return
	}
	w.mu.Lock()
	if !w.running {
		w.mu.Unlock()
		return
	}
	room := w.cfg.MaxPending - len(w.pending)
	dropped := 0
	if len(faults) > room {
		dropped = len(faults) - max(room, 0)
		faults = faults[:max(room, 0)]
	}
	w.pending = append(w.pending, faults...)
	w.mu.Unlock()
	if dropped > 0 {
		w.logger.Warn("too many node faults waiting; dropping some", "dropped", dropped)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take returns the pending faults and empties the queue.
func (w *Watcher) take() []*structs.NodeFault {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.pending
	w.pending = nil
	return out
}

// putBack returns faults of a failed pass to the front of the queue.
func (w *Watcher) putBack(faults []*structs.NodeFault) {
	if len(faults) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(faults, w.pending...)
	if len(w.pending) > w.cfg.MaxPending {
		w.pending = w.pending[:w.cfg.MaxPending]
	}
}

// Run makes passes until ctx ends: each records the faults reported since
// the last one and acts on the rows; then Run waits until the rows change,
// a fault is reported, or the next deadline comes, and at least
// MinInterval. A failed pass is retried with backoff.
func (w *Watcher) Run(ctx context.Context) {
	w.mu.Lock()
	w.running, w.pending = true, nil
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running, w.pending = false, nil
		w.mu.Unlock()
	}()
	w.logger.Debug("quarantine watcher started")
	defer w.logger.Debug("quarantine watcher stopped")
	b := backoff.New(w.cfg.RetryBase, w.cfg.RetryLimit)
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		p, unwritten, err := w.pass(ws, w.take())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.putBack(unwritten)
			w.logger.Error("quarantine pass failed; retrying", "error", err)
			if b.Wait(ctx) != nil {
				return
			}
			continue
		}
		b.Reset()
		if w.observe != nil {
			w.observe(p)
		}
		if w.wait(ctx, ws, p.NextDeadline) != nil || clock.Sleep(ctx, w.clock, w.cfg.MinInterval) != nil {
			return
		}
	}
}

// pass plans and writes once. On error it returns the faults of the
// nodes whose row was not written, for the next pass.
func (w *Watcher) pass(ws memdb.WatchSet, faults []*structs.NodeFault) (*Pass, []*structs.NodeFault, error) {
	defer metrics.MeasureSince(metricPass, time.Now())
	st := w.cfg.State()
	ws.Add(st.AbandonCh())
	probe := func(n *structs.Node) error {
		hb := w.cfg.Heartbeating == nil || w.cfg.Heartbeating(n.ID)
		return w.cfg.Probe(ProbeInput{Node: n, Heartbeating: hb})
	}
	p, err := Plan(st, ws, w.clock.Now(), faults, w.cfg.Policy, probe)
	if err != nil {
		return nil, faults, fmt.Errorf("planning: %w", err)
	}
	for i, req := range p.Writes {
		if err := w.cfg.Writer.UpdateQuarantine(req); err != nil {
			if structs.CodeOf(err) == structs.ErrCodeNotFound {
				continue // the node went meanwhile, and its row with it
			}
			return nil, faultsOf(faults, p.Writes[i:]), fmt.Errorf("writing the quarantine of node %s: %w", req.Quarantine.NodeID, err)
		}
	}
	for kind, n := range p.Faults {
		metrics.IncrCounterWithLabels(MetricFaults, float32(n), []metrics.Label{{Name: "kind", Value: kind}})
	}
	for _, id := range p.Quarantined {
		metrics.IncrCounter(MetricQuarantined, 1)
		w.logger.Warn("node quarantined", "node_id", id)
	}
	for _, id := range p.Lifted {
		metrics.IncrCounter(MetricLifted, 1)
		w.logger.Info("node quarantine lifted", "node_id", id)
	}
	for _, id := range p.ProbeFailed {
		metrics.IncrCounter(MetricProbeFailed, 1)
		w.logger.Info("quarantined node failed its probe; stays quarantined", "node_id", id)
	}
	return p, nil, nil
}

// faultsOf returns the faults of the nodes of writes.
func faultsOf(faults []*structs.NodeFault, writes []*structs.NodeQuarantineUpdateRequest) []*structs.NodeFault {
	nodes := make(map[string]bool, len(writes))
	for _, req := range writes {
		nodes[req.Quarantine.NodeID] = true
	}
	var out []*structs.NodeFault
	for _, f := range faults {
		if f != nil && nodes[f.NodeID] {
			out = append(out, f)
		}
	}
	return out
}

// wait blocks until a watch channel in ws fires, a fault is reported,
// deadline (if not zero) passes on the watcher's clock, or ctx ends (its
// error is returned).
func (w *Watcher) wait(ctx context.Context, ws memdb.WatchSet, deadline time.Time) error {
	wctx, cancel := clock.WithDeadline(ctx, w.clock, deadline)
	defer cancel()
	go func() {
		select {
		case <-w.wake:
			cancel()
		case <-wctx.Done():
		}
	}()
	_ = ws.WatchCtx(wctx)
	return ctx.Err()
}

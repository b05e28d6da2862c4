package drainer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Defaults for Config fields left zero.
const (
	// DefaultMinInterval is the least time between two passes, so a burst
	// of state changes (a plan, then its clients' updates) costs one pass.
	DefaultMinInterval = 100 * time.Millisecond
	DefaultRetryBase   = 100 * time.Millisecond
	DefaultRetryLimit  = 10 * time.Second
	// DefaultMaxMarksPerWrite bounds the allocations marked in one write.
	DefaultMaxMarksPerWrite = 512
)

// Event text and subsystem of a completed drain (Nomad's wording).
const (
	EventDrainComplete = "Node drain complete"
	EventSubsystem     = "Drain"
)

// Metric names.
var (
	// metricPass: time of one pass (plan and writes).
	metricPass = []string{"drover", "drainer", "pass"}
	// metricMarked: allocations marked for migration.
	metricMarked = []string{"drover", "drainer", "allocs_marked"}
	// metricComplete: drains completed.
	metricComplete = []string{"drover", "drainer", "drains_complete"}
)

// Writer makes the drainer's decisions durable. The server implements it
// with Raft applies; each call returns once the write is applied to the
// local state, or fails having written nothing the caller can rely on
// (the next pass recomputes from state, so a retry is always safe).
type Writer interface {
	// MarkForMigration sets DesiredTransition.Migrate on allocs (as a
	// pass read them; they must not be modified) and writes evals, in one
	// write.
	MarkForMigration(allocs []*structs.Allocation, evals []*structs.Evaluation) error
	// CompleteDrain ends the drain of node (as a pass read it): the
	// DrainStrategy is cleared, the node stays ineligible, and event is
	// appended. It must write nothing if the node's drain is no longer the
	// one read (a new drain started meanwhile).
	CompleteDrain(node *structs.Node, event *structs.NodeEvent) error
}

// State is a Reader that reports when it has been replaced (after a
// snapshot restore). *state.StateStore satisfies it.
type State interface {
	Reader
	AbandonCh() <-chan struct{}
}

// Config configures a Drainer. State and Writer are required.
type Config struct {
	Logger hclog.Logger
	// State returns the current state store; it is called once per pass.
	State  func() State
	Writer Writer
	// Clock is the source of time for deadlines and pauses; nil means the
	// wall clock.
	Clock clock.Clock
	// MinInterval is the least time between passes: 0 means
	// DefaultMinInterval, negative none.
	MinInterval time.Duration
	// RetryBase and RetryLimit bound the backoff after a failed pass.
	RetryBase, RetryLimit time.Duration
	// MaxMarksPerWrite bounds the allocations marked in one write (0
	// means DefaultMaxMarksPerWrite).
	MaxMarksPerWrite int
}

// Drainer runs passes while its context lives. Create with New.
type Drainer struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock
	// observe, if set (tests), sees every pass that succeeded.
	observe func(*Pass)
}

// New returns a drainer; it does nothing until Run.
func New(cfg Config) (*Drainer, error) {
	if cfg.State == nil || cfg.Writer == nil {
		return nil, errors.New("drainer: State and Writer are required")
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
	cfg.RetryBase = cmp.Or(cfg.RetryBase, DefaultRetryBase)
	cfg.RetryLimit = cmp.Or(cfg.RetryLimit, DefaultRetryLimit)
	cfg.MaxMarksPerWrite = cmp.Or(cfg.MaxMarksPerWrite, DefaultMaxMarksPerWrite)
	return &Drainer{cfg: cfg, logger: cfg.Logger.Named("drainer"), clock: cfg.Clock}, nil
}

// Run makes passes until ctx ends: each pass plans from the current state
// and writes what it decided; then Run waits until something the pass
// read changes, or the next drain deadline comes, and at least
// MinInterval. A failed pass is retried with backoff.
func (d *Drainer) Run(ctx context.Context) {
	d.logger.Debug("drainer started")
	defer d.logger.Debug("drainer stopped")
	b := backoff.New(d.cfg.RetryBase, d.cfg.RetryLimit)
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		p, err := d.pass(ws)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.logger.Error("drain pass failed; retrying", "error", err)
			if b.Wait(ctx) != nil {
				return
			}
			continue
		}
		b.Reset()
		if d.observe != nil {
			d.observe(p)
		}
		if d.wait(ctx, ws, p.NextDeadline) != nil || d.pause(ctx) != nil {
			return
		}
	}
}

// pass plans and writes once.
func (d *Drainer) pass(ws memdb.WatchSet) (*Pass, error) {
	defer metrics.MeasureSince(metricPass, time.Now())
	st := d.cfg.State()
	ws.Add(st.AbandonCh())
	p, err := Plan(st, ws, d.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	if err := d.apply(p); err != nil {
		return nil, err
	}
	return p, nil
}

// apply writes a pass: the marks in bounded batches, then each completed
// drain.
func (d *Drainer) apply(p *Pass) error {
	for _, batch := range splitMarks(p, d.cfg.MaxMarksPerWrite) {
		if err := d.cfg.Writer.MarkForMigration(batch.allocs, batch.evals); err != nil {
			return fmt.Errorf("marking %d allocations for migration: %w", len(batch.allocs), err)
		}
		metrics.IncrCounter(metricMarked, float32(len(batch.allocs)))
		for _, n := range batch.nodes {
			d.logger.Info("allocations marked for migration", "node_id", n.id, "allocs", n.count)
		}
	}
	for _, n := range p.Complete {
		event := &structs.NodeEvent{Message: EventDrainComplete, Subsystem: EventSubsystem, Timestamp: d.clock.Now()}
		if err := d.cfg.Writer.CompleteDrain(n, event); err != nil {
			return fmt.Errorf("completing the drain of node %s: %w", n.ID, err)
		}
		metrics.IncrCounter(metricComplete, 1)
		d.logger.Info("node drain complete", "node_id", n.ID)
	}
	return nil
}

// wait blocks until a watch channel in ws fires, deadline (if not zero)
// passes on the drainer's clock, or ctx ends (its error is returned).
func (d *Drainer) wait(ctx context.Context, ws memdb.WatchSet, deadline time.Time) error {
	wctx, cancel := clock.WithDeadline(ctx, d.clock, deadline)
	defer cancel()
	_ = ws.WatchCtx(wctx)
	return ctx.Err()
}

// pause waits MinInterval on the drainer's clock.
func (d *Drainer) pause(ctx context.Context) error {
	return clock.Sleep(ctx, d.clock, d.cfg.MinInterval)
}

// markBatch is one write of marks: the allocations, the evaluations of
// their jobs, and a count per node for the log.
type markBatch struct {
	allocs []*structs.Allocation
	evals  []*structs.Evaluation
	nodes  []nodeCount
}

type nodeCount struct {
	id    string
	count int
}

// splitMarks cuts a pass's marks into batches of at most size
// allocations; each batch carries the evaluations of its own jobs.
func splitMarks(p *Pass, size int) []markBatch {
	evalOf := make(map[structs.NamespacedID]*structs.Evaluation, len(p.Evals))
	for _, e := range p.Evals {
		evalOf[structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}] = e
	}
	var out []markBatch
	for start := 0; start < len(p.Migrate); start += size {
		allocs := p.Migrate[start:min(start+size, len(p.Migrate))]
		b := markBatch{allocs: allocs}
		seen := map[structs.NamespacedID]bool{}
		for _, a := range allocs {
			id := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
			if e := evalOf[id]; e != nil && !seen[id] {
				seen[id] = true
				b.evals = append(b.evals, e)
			}
			if k := len(b.nodes); k > 0 && b.nodes[k-1].id == a.NodeID {
				b.nodes[k-1].count++
			} else {
				b.nodes = append(b.nodes, nodeCount{id: a.NodeID, count: 1})
			}
		}
		out = append(out, b)
	}
	// A job split across batches gets its evaluation in each; the copies
	// after the first need their own IDs.
	used := map[string]bool{}
	for i := range out {
		for k, e := range out[i].evals {
			if used[e.ID] {
				c := e.Copy()
				c.ID = structs.GenerateUUID()
				out[i].evals[k] = c
			}
			used[out[i].evals[k].ID] = true
		}
	}
	return out
}

// String describes a pass for logs and test failures.
func (p *Pass) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "migrate=[")
	for i, a := range p.Migrate {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(a.Name)
	}
	fmt.Fprintf(&b, "] evals=%d complete=[", len(p.Evals))
	for i, n := range p.Complete {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(n.Name)
	}
	b.WriteString("]")
	if !p.NextDeadline.IsZero() {
		fmt.Fprintf(&b, " next=%s", p.NextDeadline.UTC().Format(time.RFC3339))
	}
	return b.String()
}

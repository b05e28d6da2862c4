package coregc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Defaults for Config fields left zero.
const (
	// DefaultInterval is how often Run collects (Nomad's 5 minutes).
	DefaultInterval = 5 * time.Minute
	// DefaultBatchSize bounds the IDs deleted in one write.
	DefaultBatchSize = 1024
)

// Metric names.
var (
	// metricCollect: time of one collection (find and writes).
	metricCollect = []string{"drover", "core_gc", "collect"}
	// metricEvals, metricAllocs, metricJobs, metricNodes: objects deleted.
	metricEvals  = []string{"drover", "core_gc", "evals"}
	metricAllocs = []string{"drover", "core_gc", "allocs"}
	metricJobs   = []string{"drover", "core_gc", "jobs"}
	metricNodes  = []string{"drover", "core_gc", "nodes"}
	// metricDeployments: deployments deleted.
	metricDeployments = []string{"drover", "core_gc", "deployments"}
)

// Writer deletes through Raft. Each call returns once the write is applied
// locally. IDs that no longer exist must be skipped, not fail the write.
type Writer interface {
	// DeleteEvalsAndAllocs removes evaluations, allocations and
	// deployments.
	DeleteEvalsAndAllocs(evalIDs, allocIDs, deploymentIDs []string) error
	// PurgeJob removes job (as Find read it); it must write nothing if
	// the stored job changed since (a new version was registered).
	PurgeJob(job *structs.Job) error
	// DeleteNodes deregisters nodes.
	DeleteNodes(nodeIDs []string) error
}

// Config configures a Collector. State and Writer are required.
type Config struct {
	Logger hclog.Logger
	// State returns the current state store.
	State  func() Reader
	Writer Writer
	// Clock is the source of time for ages and the interval; nil means
	// the wall clock.
	Clock clock.Clock
	// Interval is the period of Run (0 means DefaultInterval).
	Interval time.Duration
	// Thresholds are Run's ages; zero fields take DefaultThresholds.
	Thresholds Thresholds
	// BatchSize bounds the IDs per write (0 means DefaultBatchSize).
	BatchSize int
}

// Stats counts what a collection deleted.
type Stats struct {
	Evals, Allocs, Deployments, Jobs, Nodes int
}

// Collector runs collections. Create with New; safe for concurrent use
// (collections do not overlap).
type Collector struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock

	mu sync.Mutex // held for a whole collection
}

// New returns a collector.
func New(cfg Config) (*Collector, error) {
	if cfg.State == nil || cfg.Writer == nil {
		return nil, errors.New("coregc: State and Writer are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	def := DefaultThresholds()
	cfg.Thresholds.Eval = cmp.Or(cfg.Thresholds.Eval, def.Eval)
	cfg.Thresholds.Job = cmp.Or(cfg.Thresholds.Job, def.Job)
	cfg.Thresholds.Node = cmp.Or(cfg.Thresholds.Node, def.Node)
	cfg.Thresholds.Deployment = cmp.Or(cfg.Thresholds.Deployment, def.Deployment)
	return &Collector{cfg: cfg, logger: cfg.Logger.Named("core_gc"), clock: cfg.Clock}, nil
}

// Thresholds returns the thresholds Run uses.
func (c *Collector) Thresholds() Thresholds { return c.cfg.Thresholds }

// Collect runs one collection now with thresholds th (Force for
// everything terminal): evaluations, allocations and deployments first, in
// batches, then jobs, then nodes. It stops at the first failed write and returns
// what was deleted until then.
func (c *Collector) Collect(th Thresholds) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer metrics.MeasureSince(metricCollect, time.Now())
	var st Stats
	g, err := Find(c.cfg.State(), c.clock.Now(), th)
	if err != nil {
		return st, fmt.Errorf("finding garbage: %w", err)
	}
	if g.Empty() {
		return st, nil
	}
	n := c.cfg.BatchSize
	for len(g.Evals)+len(g.Allocs)+len(g.Deployments) > 0 {
		evals := g.Evals[:min(n, len(g.Evals))]
		allocs := g.Allocs[:min(n-len(evals), len(g.Allocs))]
		deps := g.Deployments[:min(n-len(evals)-len(allocs), len(g.Deployments))]
		if err := c.cfg.Writer.DeleteEvalsAndAllocs(evals, allocs, deps); err != nil {
			return st, fmt.Errorf("deleting %d evaluations, %d allocations and %d deployments: %w",
				len(evals), len(allocs), len(deps), err)
		}
		g.Evals, g.Allocs, g.Deployments = g.Evals[len(evals):], g.Allocs[len(allocs):], g.Deployments[len(deps):]
		st.Evals += len(evals)
		st.Allocs += len(allocs)
		st.Deployments += len(deps)
		metrics.IncrCounter(metricEvals, float32(len(evals)))
		metrics.IncrCounter(metricAllocs, float32(len(allocs)))
		metrics.IncrCounter(metricDeployments, float32(len(deps)))
	}
	for _, j := range g.Jobs {
		if err := c.cfg.Writer.PurgeJob(j); err != nil {
			return st, fmt.Errorf("purging job %q: %w", j.ID, err)
		}
		st.Jobs++
		metrics.IncrCounter(metricJobs, 1)
	}
	for start := 0; start < len(g.Nodes); start += n {
		ids := g.Nodes[start:min(start+n, len(g.Nodes))]
		if err := c.cfg.Writer.DeleteNodes(ids); err != nil {
			return st, fmt.Errorf("deregistering %d nodes: %w", len(ids), err)
		}
		st.Nodes += len(ids)
		metrics.IncrCounter(metricNodes, float32(len(ids)))
	}
	c.logger.Info("garbage collected", "evals", st.Evals, "allocs", st.Allocs, "deployments", st.Deployments, "jobs", st.Jobs, "nodes", st.Nodes)
	return st, nil
}

// Run collects with the configured thresholds every Interval until ctx
// ends. A failed collection is logged; the next interval tries again.
func (c *Collector) Run(ctx context.Context) {
	c.logger.Debug("collector started", "interval", c.cfg.Interval)
	defer c.logger.Debug("collector stopped")
	for {
		tick := make(chan struct{})
		t := c.clock.AfterFunc(c.cfg.Interval, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		if _, err := c.Collect(c.cfg.Thresholds); err != nil && ctx.Err() == nil {
			c.logger.Error("garbage collection failed", "error", err)
		}
	}
}

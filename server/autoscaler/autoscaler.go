package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Defaults for Config fields left zero.
const (
	// DefaultInterval is the longest time between two passes (the queue
	// of blocked evaluations has no watch channel).
	DefaultInterval = time.Second
	// DefaultReconcileInterval is how often the leader lists every
	// pool's provider to find instances its table does not know.
	DefaultReconcileInterval = time.Minute
	// DefaultCallTimeout bounds one provider call.
	DefaultCallTimeout = 2 * time.Minute
	// DefaultMinInterval is the least time between two passes, so a burst
	// of state changes (a plan, then its clients' updates) costs one.
	DefaultMinInterval = 100 * time.Millisecond
)

// Metric names (the server's Prometheus output; docs/operations.md).
var (
	// MetricQuotaErrors counts provider quota errors (label pool).
	MetricQuotaErrors = []string{"drover", "autoscaler", "quota_errors"}
	// MetricCreates and MetricDestroys count instances created and
	// destroyed (labels pool, type).
	MetricCreates  = []string{"drover", "autoscaler", "creates"}
	MetricDestroys = []string{"drover", "autoscaler", "destroys"}
	// MetricBootTime samples seconds from create to booted (labels pool,
	// type).
	MetricBootTime = []string{"drover", "autoscaler", "boot_seconds"}
)

// Reader is the state the autoscaler reads; *state.StateStore satisfies
// it.
type Reader interface {
	PoolAutoscalers(ws memdb.WatchSet) ([]*structs.PoolAutoscaler, error)
	PoolInstances(ws memdb.WatchSet, pool string) ([]*structs.PoolInstance, error)
	PoolAutoscaleStatusByPool(ws memdb.WatchSet, pool string) (*structs.PoolAutoscaleStatus, error)
	Nodes(ws memdb.WatchSet) ([]*structs.Node, error)
	NodeUsage(ws memdb.WatchSet, nodeID string) (structs.NodeUsage, error)
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	JobSummary(ws memdb.WatchSet, namespace, id string) (*structs.JobSummary, error)
	AbandonCh() <-chan struct{}
}

// Blocked is the leader's tracker of blocked evaluations.
type Blocked interface {
	Each(fn func(*structs.Evaluation))
}

// Writer makes the autoscaler's decisions durable (Raft applies in the
// server). Each call returns once the write is applied, or fails; a
// failure may still have been applied (the outcome is unknown), and the
// autoscaler never calls a provider's Create after a failed write.
type Writer interface {
	UpdateInstances(req *structs.PoolInstanceUpdateRequest) error
	SetNodeEligibility(nodeID string, eligible bool) error
	DrainNode(nodeID string) error
}

// Config configures an Autoscaler. State, Writer and Providers are
// required.
type Config struct {
	Logger    hclog.Logger
	State     func() Reader
	Blocked   Blocked
	Writer    Writer
	Providers map[string]Provider
	// Clock is the source of time (nil: the wall clock).
	Clock clock.Clock
	// Interval, MinInterval, ReconcileInterval and CallTimeout: 0 takes
	// the defaults.
	Interval          time.Duration
	MinInterval       time.Duration
	ReconcileInterval time.Duration
	CallTimeout       time.Duration
	// NewID names new instances (nil: structs.GenerateUUID).
	NewID func() string
}

// Autoscaler is the leader's loop over the autoscaling node pools.
type Autoscaler struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock
	// lastNote is, per pool and note type, the last note's message (so a
	// standing limit is one event, not one per pass); Run's goroutine only.
	lastNote map[string]string
	// reconciled is, per pool, when its provider was last listed
	// (zero: must list before deciding); Run's goroutine only.
	reconciled map[string]time.Time
}

// New returns an autoscaler.
func New(cfg Config) (*Autoscaler, error) {
	if cfg.State == nil || cfg.Writer == nil {
		return nil, errors.New("autoscaler: State and Writer are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.ReconcileInterval <= 0 {
		cfg.ReconcileInterval = DefaultReconcileInterval
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.NewID == nil {
		cfg.NewID = structs.GenerateUUID
	}
	return &Autoscaler{cfg: cfg, logger: cfg.Logger.Named("autoscaler"), clock: cfg.Clock,
		lastNote: map[string]string{}, reconciled: map[string]time.Time{}}, nil
}

// Run makes passes until ctx ends: after every change of the pools'
// configurations, instances or nodes (at most one per MinInterval), and
// at least every Interval.
func (a *Autoscaler) Run(ctx context.Context) {
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		wake, err := a.Pass(ctx, ws)
		if err != nil && ctx.Err() == nil {
			a.logger.Error("autoscaler pass failed", "error", err)
		}
		deadline := a.clock.Now().Add(a.cfg.Interval)
		if !wake.IsZero() && wake.Before(deadline) {
			deadline = wake
		}
		wctx, cancel := clock.WithDeadline(ctx, a.clock, deadline)
		_ = ws.WatchCtx(wctx)
		cancel()
		if clock.Sleep(ctx, a.clock, a.cfg.MinInterval) != nil {
			return
		}
	}
}

// Pass decides and acts once for every configured pool; it returns the
// earliest timer due.
func (a *Autoscaler) Pass(ctx context.Context, ws memdb.WatchSet) (time.Time, error) {
	st := a.cfg.State()
	ws.Add(st.AbandonCh())
	configs, err := st.PoolAutoscalers(ws)
	if err != nil {
		return time.Time{}, err
	}
	if len(configs) == 0 {
		return time.Time{}, nil
	}
	nodes, err := st.Nodes(ws)
	if err != nil {
		return time.Time{}, err
	}
	asks, err := a.asks(st, configs)
	if err != nil {
		return time.Time{}, err
	}
	var wake time.Time
	var errs []error
	for _, c := range configs {
		w, err := a.passPool(ctx, st, ws, c, nodes, asks[c.Pool])
		if err != nil {
			errs = append(errs, fmt.Errorf("node pool %q: %w", c.Pool, err))
		}
		if !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
			wake = w
		}
	}
	return wake, errors.Join(errs...)
}

// asks reads the queue: for every evaluation blocked on capacity whose
// job places in an autoscaled pool, an Ask per queued allocation of each
// failed group.
func (a *Autoscaler) asks(st Reader, configs []*structs.PoolAutoscaler) (map[string][]Ask, error) {
	out := map[string][]Ask{}
	if a.cfg.Blocked == nil {
		return out, nil
	}
	pools := make(map[string]bool, len(configs))
	for _, c := range configs {
		pools[c.Pool] = true
	}
	var firstErr error
	a.cfg.Blocked.Each(func(e *structs.Evaluation) {
		if firstErr != nil {
			return
		}
		job, err := st.JobByID(nil, e.Namespace, e.JobID)
		if errors.Is(err, structs.ErrNotFound) {
			return
		}
		if err != nil {
			firstErr = err
			return
		}
		if !pools[job.NodePool] || job.Stopped() {
			return
		}
		summary, err := st.JobSummary(nil, e.Namespace, e.JobID)
		if err != nil && !errors.Is(err, structs.ErrNotFound) {
			firstErr = err
			return
		}
		for name, m := range e.FailedTGAllocs {
			if m != nil && m.NodesExhausted == 0 && m.NodesFiltered > 0 {
				continue // constraints: more capacity of the pool would not help
			}
			tg := job.LookupTaskGroup(name)
			if tg == nil {
				continue
			}
			n := 1
			if m != nil {
				n += m.CoalescedFailures
			}
			if summary != nil {
				if s, ok := summary.Summary[name]; ok && s.Queued > 0 {
					n = s.Queued
				}
			}
			ask := groupAsk(tg)
			for range n {
				out[job.NodePool] = append(out[job.NodePool], ask)
			}
		}
	})
	return out, firstErr
}

// groupAsk is what one allocation of tg asks for.
func groupAsk(tg *structs.TaskGroup) Ask {
	var a Ask
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			a.CPU += t.Resources.CPU
			a.MemoryMB += t.Resources.MemoryMB
		}
	}
	return a
}

// passPool is one pool's pass: reconcile with the provider when due,
// plan, then act on the plan.
func (a *Autoscaler) passPool(ctx context.Context, st Reader, ws memdb.WatchSet, c *structs.PoolAutoscaler, nodes []*structs.Node, asks []Ask) (time.Time, error) {
	c = c.Copy()
	c.Canonicalize()
	now := a.clock.Now()
	prov := a.cfg.Providers[c.Provider]
	if prov == nil {
		a.note(c.Pool, &structs.PoolEvent{Pool: c.Pool, Time: now.UnixNano(), Type: structs.PoolEventError,
			Message: fmt.Sprintf("provider %q is not configured on the leader", c.Provider)})
		return time.Time{}, nil
	}
	instances, err := st.PoolInstances(ws, c.Pool)
	if err != nil {
		return time.Time{}, err
	}
	if last := a.reconciled[c.Pool]; last.IsZero() || !now.Before(last.Add(a.cfg.ReconcileInterval)) {
		if err := a.reconcile(ctx, prov, c, instances, now, last.IsZero()); err != nil {
			return now.Add(a.cfg.Interval), err
		}
		a.reconciled[c.Pool] = now
		if instances, err = st.PoolInstances(ws, c.Pool); err != nil {
			return time.Time{}, err
		}
	}
	view := &PoolView{Config: c, Instances: instances, Nodes: map[string]*NodeView{}, Asks: asks}
	if s, err := st.PoolAutoscaleStatusByPool(ws, c.Pool); err == nil && s.QuotaBackoffUntil > 0 {
		view.QuotaBackoffUntil = time.Unix(0, s.QuotaBackoffUntil)
	}
	for _, n := range nodes {
		id := n.Meta[structs.InstanceTagID]
		if id == "" || n.NodePool != c.Pool {
			continue
		}
		if prev, ok := view.Nodes[id]; ok && prev.Node.ModifyIndex > n.ModifyIndex {
			continue // the newest registration for the instance
		}
		nv := &NodeView{Node: n}
		if u, err := st.NodeUsage(ws, n.ID); err == nil {
			nv.Allocs = u.Allocs
			if r := n.NodeResources; r != nil {
				nv.FreeCPU, nv.FreeMemoryMB = int(r.Cpu.CpuShares-u.Used.CPU), int(r.Memory.MemoryMB-u.Used.MemoryMB)
				if rr := n.ReservedResources; rr != nil {
					nv.FreeCPU -= int(rr.Cpu.CpuShares)
					nv.FreeMemoryMB -= int(rr.Memory.MemoryMB)
				}
			}
		}
		view.Nodes[id] = nv
	}
	d := Plan(view, now, a.cfg.NewID)
	return d.Wake, a.apply(ctx, prov, c, d, now)
}

// apply acts on a decision: record, then create; record the state
// changes; destroy; mark nodes.
func (a *Autoscaler) apply(ctx context.Context, prov Provider, c *structs.PoolAutoscaler, d *Decision, now time.Time) error {
	for _, b := range d.Booted {
		metrics.AddSampleWithLabels(MetricBootTime, float32(b.Seconds()), []metrics.Label{{Name: "pool", Value: c.Pool}})
	}
	if len(d.Update) > 0 || len(d.Remove) > 0 || len(d.Events) > len(d.Create) {
		req := &structs.PoolInstanceUpdateRequest{Instances: d.Update, Remove: d.Remove}
		for _, e := range d.Events {
			if e.Type != structs.PoolEventCreate {
				req.Events = append(req.Events, e)
			}
		}
		if err := a.cfg.Writer.UpdateInstances(req); err != nil {
			return err
		}
	}
	noted := map[string]bool{}
	for _, n := range d.Notes {
		a.note(c.Pool, n)
		noted[n.Type] = true
	}
	for _, typ := range []string{structs.PoolEventLimit, structs.PoolEventNoFit} {
		if !noted[typ] {
			delete(a.lastNote, c.Pool+"\x00"+typ) // a later limit is news again
		}
	}
	if len(d.Create) > 0 {
		if err := a.create(ctx, prov, c, d, now); err != nil {
			return err
		}
	}
	for _, in := range d.Destroy {
		if err := a.destroy(ctx, prov, c, in); err != nil {
			a.logger.Warn("destroying instance failed; retrying", "pool", c.Pool, "instance_id", in.ID, "error", err)
		}
	}
	for _, id := range d.Ineligible {
		if err := a.cfg.Writer.SetNodeEligibility(id, false); err != nil {
			return err
		}
	}
	for _, id := range d.Eligible {
		if err := a.cfg.Writer.SetNodeEligibility(id, true); err != nil {
			return err
		}
	}
	for _, id := range d.Drain {
		if err := a.cfg.Writer.DrainNode(id); err != nil {
			return err
		}
	}
	return nil
}

// create records the new instances (booting) with their events, then
// asks the provider for each. The record comes first: an instance the
// provider created always has a record, so a new leader adopts it
// (docs/operations.md, "Adoption"). A quota error marks that instance
// and the rest gone and starts the pool's back-off.
func (a *Autoscaler) create(ctx context.Context, prov Provider, c *structs.PoolAutoscaler, d *Decision, now time.Time) error {
	req := &structs.PoolInstanceUpdateRequest{Instances: d.Create}
	for _, e := range d.Events {
		if e.Type == structs.PoolEventCreate {
			req.Events = append(req.Events, e)
		}
	}
	if err := a.cfg.Writer.UpdateInstances(req); err != nil {
		// Not acknowledged: create nothing (the record may exist; the
		// next reconcile marks a record without an instance gone).
		a.reconciled[c.Pool] = time.Time{}
		return err
	}
	for i, in := range d.Create {
		t := c.InstanceType(in.Type)
		spec := CreateSpec{ID: in.ID, Pool: c.Pool, ProviderType: in.ProviderType, Tags: in.Tags(),
			Meta: map[string]string{structs.InstanceTagID: in.ID}, Options: maps.Clone(c.ProviderOptions)}
		if t != nil {
			spec.CPU, spec.MemoryMB = t.CPU, t.MemoryMB
		}
		cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
		pi, err := prov.Create(cctx, spec)
		cancel()
		labels := []metrics.Label{{Name: "pool", Value: c.Pool}, {Name: "type", Value: in.Type}}
		if err == nil {
			metrics.IncrCounterWithLabels(MetricCreates, 1, labels)
			if pi != nil && pi.ProviderID != "" && pi.ProviderID != in.ID {
				u := in.Copy()
				u.ProviderID = pi.ProviderID
				if err := a.cfg.Writer.UpdateInstances(&structs.PoolInstanceUpdateRequest{Instances: []*structs.PoolInstance{u}}); err != nil {
					return err
				}
			}
			continue
		}
		nowNs := a.clock.Now().UnixNano()
		upd := &structs.PoolInstanceUpdateRequest{}
		for _, rest := range d.Create[i:] {
			g := rest.Copy()
			g.State, g.GoneTime = structs.InstanceGone, nowNs
			g.StateReason = "create failed: " + err.Error()
			upd.Instances = append(upd.Instances, g)
		}
		if IsQuotaError(err) {
			metrics.IncrCounterWithLabels(MetricQuotaErrors, 1, []metrics.Label{{Name: "pool", Value: c.Pool}})
			until := a.clock.Now().Add(c.QuotaBackoff)
			upd.Events = append(upd.Events, &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: structs.PoolEventQuota, InstanceID: in.ID,
				Message:           fmt.Sprintf("provider quota error (%v): no create until %s", err, until.UTC().Format(time.RFC3339)),
				QuotaBackoffUntil: until.UnixNano()})
		} else {
			upd.Events = append(upd.Events, &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: structs.PoolEventError, InstanceID: in.ID,
				Message: fmt.Sprintf("create failed: %v", err)})
		}
		return a.cfg.Writer.UpdateInstances(upd)
	}
	return nil
}

// destroy destroys an instance (shutting down) and records it gone.
func (a *Autoscaler) destroy(ctx context.Context, prov Provider, c *structs.PoolAutoscaler, in *structs.PoolInstance) error {
	id := in.ProviderID
	if id == "" {
		id = in.ID
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	err := prov.Destroy(cctx, id)
	cancel()
	if err != nil {
		return err
	}
	metrics.IncrCounterWithLabels(MetricDestroys, 1, []metrics.Label{{Name: "pool", Value: c.Pool}, {Name: "type", Value: in.Type}})
	g := in.Copy()
	g.State, g.GoneTime = structs.InstanceGone, a.clock.Now().UnixNano()
	return a.cfg.Writer.UpdateInstances(&structs.PoolInstanceUpdateRequest{Instances: []*structs.PoolInstance{g}})
}

// reconcile lists the pool's instances at the provider and makes the
// table agree (the adoption rule, docs/operations.md):
//   - a provider instance the table has (not gone) is the table's: a
//     booting one is adopted as it is, its boot timeout counting from its
//     creation;
//   - one the table does not have (a record lost) is adopted as booting,
//     from now;
//   - one the table has as gone is destroyed again;
//   - a booting record with no provider instance is marked gone: its
//     create never happened (the leader creates only after the record is
//     acknowledged, and a provider lists what it created).
//
// first is the first reconcile of this leader's loop (the adoptions of
// booting instances are recorded then only).
func (a *Autoscaler) reconcile(ctx context.Context, prov Provider, c *structs.PoolAutoscaler, instances []*structs.PoolInstance, now time.Time, first bool) error {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	found, err := prov.List(cctx, map[string]string{structs.InstanceTagPool: c.Pool})
	cancel()
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	known := make(map[string]*structs.PoolInstance, len(instances))
	for _, in := range instances {
		known[in.ID] = in
	}
	nowNs := now.UnixNano()
	req := &structs.PoolInstanceUpdateRequest{}
	seen := map[string]bool{}
	for _, pi := range found {
		id := pi.Tags[structs.InstanceTagID]
		if id == "" {
			continue
		}
		seen[id] = true
		in := known[id]
		switch {
		case in == nil && pi.Running:
			typ := c.InstanceType(pi.Tags[structs.InstanceTagType])
			adopted := &structs.PoolInstance{ID: id, Pool: c.Pool, Type: pi.Tags[structs.InstanceTagType], ProviderID: pi.ProviderID,
				State: structs.InstanceBooting, Behavior: structs.InstanceBehaviorRun, CreateTime: nowNs}
			if typ != nil {
				adopted.ProviderType, adopted.PricePerHour = typ.ProviderType, typ.PricePerHour
			}
			req.Instances = append(req.Instances, adopted)
			req.Events = append(req.Events, &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: structs.PoolEventAdopt, InstanceID: id,
				Message: "instance found at the provider without a record: adopted as booting"})
		case in == nil || in.Gone() || !pi.Running:
			if err := prov.Destroy(ctx, pi.ProviderID); err != nil {
				a.logger.Warn("destroying a stray instance failed", "pool", c.Pool, "instance_id", id, "error", err)
			}
			if in != nil && !in.Gone() {
				g := in.Copy()
				g.State, g.GoneTime, g.StateReason = structs.InstanceGone, nowNs, "stopped at the provider"
				req.Instances = append(req.Instances, g)
				req.Events = append(req.Events, &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: structs.PoolEventDestroy, InstanceID: id,
					Message: "the provider reports the instance stopped"})
			}
		case in.State == structs.InstanceBooting && first:
			req.Events = append(req.Events, &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: structs.PoolEventAdopt, InstanceID: id,
				Message: "booting instance found at the provider: adopted (not created again)"})
		}
	}
	for _, in := range instances {
		if in.State == structs.InstanceBooting && !seen[in.ID] {
			g := in.Copy()
			g.State, g.GoneTime, g.StateReason = structs.InstanceGone, nowNs, "no such instance at the provider"
			req.Instances = append(req.Instances, g)
			req.Events = append(req.Events, &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: structs.PoolEventDestroy, InstanceID: in.ID,
				Message: "booting record without an instance at the provider (its create never happened): marked gone"})
		}
	}
	if len(req.Instances) == 0 && len(req.Events) == 0 {
		return nil
	}
	return a.cfg.Writer.UpdateInstances(req)
}

// note records e unless it repeats the pool's last note of its type.
func (a *Autoscaler) note(pool string, e *structs.PoolEvent) {
	slot := pool + "\x00" + e.Type
	if a.lastNote[slot] == e.Message {
		return
	}
	if err := a.cfg.Writer.UpdateInstances(&structs.PoolInstanceUpdateRequest{Events: []*structs.PoolEvent{e}}); err != nil {
		a.logger.Warn("recording an autoscaler note failed", "pool", pool, "error", err)
		return
	}
	a.lastNote[slot] = e.Message
}

package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-project/drover/server/coregc"
	"github.com/drover-project/drover/server/drainer"
	"github.com/drover-project/drover/structs"
)

// This file wires two leader components into the server: the node drainer
// (package drainer) and the core garbage collector (package coregc). Both
// decide from the state store alone; the writers below turn their
// decisions into Raft entries of existing message types.

// Names of the leader hooks below.
const (
	drainerHookName = "node_drainer"
	coreGCHookName  = "core_gc"
)

// DrainGCConfig tunes the drainer and the garbage collector. Zero values
// take the packages' defaults (GC every 5 minutes; evaluations 1 h, jobs
// 4 h, nodes 24 h, deployments 1 h).
type DrainGCConfig struct {
	// GCInterval is the period of the leader's garbage collection.
	GCInterval time.Duration
	// EvalGCThreshold, JobGCThreshold and NodeGCThreshold are the ages
	// past which terminal evaluations (with their allocations), dead jobs
	// and down nodes are collected.
	EvalGCThreshold time.Duration
	JobGCThreshold  time.Duration
	NodeGCThreshold time.Duration
	// DeploymentGCThreshold is the age past which a deployment no longer
	// active, with no live allocation, is collected.
	DeploymentGCThreshold time.Duration
	// DrainerMinInterval is the least time between two drainer passes
	// (0: the drainer's default; negative: none).
	DrainerMinInterval time.Duration
}

// DrainGCLeaderHooks returns the leader hooks that run the node drainer
// and the periodic garbage collector while a server leads. Give them to
// the server in Config.LeaderHooks (or, once built in, nowhere).
func DrainGCLeaderHooks(cfg DrainGCConfig) []LeaderHook {
	return []LeaderHook{&drainerHook{cfg: cfg}, &coreGCHook{cfg: cfg}}
}

// leaderRun is a goroutine a leader hook starts and stops.
type leaderRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *leaderRun) start(s *Server, run func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(s.shutdownCtx)
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		run(ctx)
	}()
}

func (r *leaderRun) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel, r.done = nil, nil
	}
}

// drainerHook runs the node drainer while leading.
type drainerHook struct {
	cfg DrainGCConfig
	run leaderRun
}

func (h *drainerHook) Name() string { return drainerHookName }

func (h *drainerHook) Establish(s *Server) error {
	d, err := drainer.New(drainer.Config{
		Logger:      s.logger,
		State:       func() drainer.State { return s.fsm.State() },
		Writer:      drainWriter{s: s},
		MinInterval: h.cfg.DrainerMinInterval,
	})
	if err != nil {
		return err
	}
	h.run.start(s, d.Run)
	return nil
}

func (h *drainerHook) Revoke(*Server) error {
	h.run.stop()
	return nil
}

// coreGCHook runs the periodic garbage collection while leading.
type coreGCHook struct {
	cfg DrainGCConfig
	run leaderRun
}

func (h *coreGCHook) Name() string { return coreGCHookName }

func (h *coreGCHook) Establish(s *Server) error {
	c, err := s.newCollector(h.cfg)
	if err != nil {
		return err
	}
	h.run.start(s, c.Run)
	return nil
}

func (h *coreGCHook) Revoke(*Server) error {
	h.run.stop()
	return nil
}

func (s *Server) newCollector(cfg DrainGCConfig) (*coregc.Collector, error) {
	return coregc.New(coregc.Config{
		Logger:   s.logger,
		State:    func() coregc.Reader { return s.fsm.State() },
		Writer:   gcWriter{s: s},
		Interval: cfg.GCInterval,
		Thresholds: coregc.Thresholds{
			Eval: cfg.EvalGCThreshold, Job: cfg.JobGCThreshold, Node: cfg.NodeGCThreshold,
			Deployment: cfg.DeploymentGCThreshold,
		},
	})
}

// garbageCollectNow collects everything terminal, whatever its age
// (System.GarbageCollect, on the leader). It returns the latest index of
// the state once done.
func (s *Server) garbageCollectNow() (uint64, error) {
	c, err := s.newCollector(DrainGCConfig{})
	if err != nil {
		return 0, err
	}
	if _, err := c.Collect(coregc.Force); err != nil {
		return 0, err
	}
	return s.fsm.State().LatestIndex()
}

// drainWriter writes the drainer's decisions through Raft.
type drainWriter struct{ s *Server }

var _ drainer.Writer = drainWriter{}

// MarkForMigration writes the marks and the evaluations in one
// AllocUpdateDesiredTransition entry: the FSM merges Migrate onto the
// stored allocations, so a concurrent write (a plan stopping one) is never
// undone.
func (w drainWriter) MarkForMigration(allocs []*structs.Allocation, evals []*structs.Evaluation) error {
	yes := true
	req := &structs.AllocUpdateDesiredTransitionRequest{
		Allocs:    make(map[string]*structs.DesiredTransition, len(allocs)),
		Evals:     evals,
		UpdatedAt: time.Now().UnixNano(),
	}
	for _, a := range allocs {
		req.Allocs[a.ID] = &structs.DesiredTransition{Migrate: &yes}
	}
	_, _, err := w.s.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
	return err
}

// CompleteDrain clears the node's drain strategy (leaving it ineligible)
// unless the drain changed since the drainer read the node.
func (w drainWriter) CompleteDrain(node *structs.Node, event *structs.NodeEvent) error {
	cur, err := w.s.fsm.State().NodeByID(nil, node.ID)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		return nil
	case err != nil:
		return err
	case !sameDrain(cur.DrainStrategy, node.DrainStrategy):
		return nil
	}
	req := &structs.NodeUpdateDrainRequest{NodeID: node.ID, NodeEvent: event, UpdatedAt: time.Now().Unix()}
	_, _, err = w.s.raftApply(structs.NodeUpdateDrainRequestType, req)
	return err
}

// sameDrain reports whether two drain strategies are the same drain.
func sameDrain(a, b *structs.DrainStrategy) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.StartedAt.Equal(b.StartedAt) && a.Deadline == b.Deadline && a.IgnoreSystemJobs == b.IgnoreSystemJobs
}

// gcWriter writes the garbage collector's deletions through Raft.
type gcWriter struct{ s *Server }

var _ coregc.Writer = gcWriter{}

func (w gcWriter) DeleteEvalsAndAllocs(evals, allocs, deployments []string) error {
	req := &structs.EvalDeleteRequest{Evals: evals, Allocs: allocs, Deployments: deployments}
	_, _, err := w.s.raftApply(structs.EvalDeleteRequestType, req)
	return err
}

// PurgeJob purges the job unless it was registered again (or is no
// longer dead) since the collector read it.
func (w gcWriter) PurgeJob(job *structs.Job) error {
	cur, err := w.s.fsm.State().JobByID(nil, job.Namespace, job.ID)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		return nil
	case err != nil:
		return err
	case cur.JobModifyIndex != job.JobModifyIndex || cur.Status != structs.JobStatusDead:
		return nil
	}
	req := &structs.JobDeregisterRequest{JobID: job.ID, Purge: true, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}
	_, _, err = w.s.raftApply(structs.JobDeregisterRequestType, req)
	if errors.Is(err, structs.ErrNotFound) {
		return nil
	}
	return err
}

// DeleteNodes deregisters the nodes that still exist. A node deleted
// between the check and the write fails the whole entry, so the nodes are
// then deleted one by one.
func (w gcWriter) DeleteNodes(ids []string) error {
	st := w.s.fsm.State()
	var present []string
	for _, id := range ids {
		if _, err := st.NodeByID(nil, id); err == nil {
			present = append(present, id)
		}
	}
	if len(present) == 0 {
		return nil
	}
	_, _, err := w.s.raftApply(structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: present})
	if errors.Is(err, structs.ErrNotFound) && len(present) > 1 {
		for _, id := range present {
			if err := w.DeleteNodes([]string{id}); err != nil {
				return fmt.Errorf("node %s: %w", id, err)
			}
		}
		return nil
	}
	if errors.Is(err, structs.ErrNotFound) {
		return nil
	}
	if err == nil {
		for _, id := range present {
			w.s.heartbeats.Clear(id)
		}
	}
	return err
}

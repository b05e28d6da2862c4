package server

import (
	"context"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/worker"
)

// Worker timings the server sets (a worker's own defaults suit a single
// process; here retries ride out leader elections, which take about a
// second).
const (
	workerRetryBase  = 100 * time.Millisecond
	workerRetryLimit = 2 * time.Second
	// A follower's state trails the leader's by about raft's commit
	// timeout; poll for it briskly rather than backing off to a second.
	workerIndexWaitBase = 5 * time.Millisecond
	workerIndexWaitMax  = 25 * time.Millisecond
)

// workerSchedulers are the scheduler types every worker serves.
var workerSchedulers = []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch}

// startWorkers starts Config.NumSchedulers workers; they stop when the
// server shuts down.
func (s *Server) startWorkers() {
	leader := &leaderClient{s: s}
	for i := 0; i < s.config.NumSchedulers; i++ {
		cfg := worker.Config{
			Logger:           s.logger,
			Leader:           leader,
			State:            s.fsm.State,
			Schedulers:       workerSchedulers,
			SubmitRetryBase:  workerRetryBase,
			SubmitRetryLimit: workerRetryLimit,
			IndexWaitBase:    workerIndexWaitBase,
			IndexWaitMax:     workerIndexWaitMax,
		}
		if s.config.WorkerConfig != nil {
			s.config.WorkerConfig(&cfg)
		}
		w := worker.New(cfg)
		s.workers = append(s.workers, w)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			w.Run(s.shutdownCtx)
		}()
	}
}

// Workers returns the server's scheduler workers (tests inspect pausing).
func (s *Server) Workers() []*worker.Worker { return s.workers }

// workerHook pauses most workers while this server leads: the leader also
// applies every plan, and its workers would compete with it for CPU.
type workerHook struct{}

func (workerHook) Name() string { return "worker_pause" }

func (workerHook) Establish(s *Server) error {
	keep := int(float64(len(s.workers))*s.config.LeaderWorkerFraction + 0.5)
	keep = max(keep, 1)
	for i, w := range s.workers {
		if i >= keep {
			w.Pause()
		}
	}
	return nil
}

func (workerHook) Revoke(s *Server) error {
	for _, w := range s.workers {
		w.Resume()
	}
	return nil
}

// leaderClient is the workers' way to the leader (worker.Leader). While
// this server leads with its broker enabled, calls go straight to the
// broker and plan queue; otherwise they are RPCs that the server routes to
// the leader (waiting for one to be elected). Errors are typed either way.
type leaderClient struct {
	s *Server
}

var _ worker.Leader = (*leaderClient)(nil)

// local reports whether this server can serve worker calls itself.
func (c *leaderClient) local() bool {
	return c.s.IsLeader() && c.s.broker.Enabled()
}

func (c *leaderClient) Dequeue(ctx context.Context, schedulers []string, timeout time.Duration) (*structs.Evaluation, string, uint64, error) {
	if c.local() {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return c.s.dequeueEval(ctx, schedulers, true)
	}
	// Served here if this server becomes the leader while the call waits
	// for one (the broker then wakes it first); forwarded, it is remote.
	args := &structs.EvalDequeueRequest{Schedulers: schedulers, Timeout: timeout, LocalWorker: true, WriteRequest: c.s.internalWrite()}
	var reply structs.EvalDequeueResponse
	if err := c.s.RPC("Eval.Dequeue", args, &reply); err != nil {
		return nil, "", 0, err
	}
	return reply.Eval, reply.Token, reply.WaitIndex, nil
}

func (c *leaderClient) Ack(ctx context.Context, evalID, token string) error {
	if c.local() {
		return c.s.broker.Ack(evalID, token)
	}
	var reply structs.GenericResponse
	return c.s.RPC("Eval.Ack", &structs.EvalAckRequest{EvalID: evalID, Token: token, WriteRequest: c.s.internalWrite()}, &reply)
}

func (c *leaderClient) Nack(ctx context.Context, evalID, token string) error {
	if c.local() {
		return c.s.broker.Nack(evalID, token)
	}
	var reply structs.GenericResponse
	return c.s.RPC("Eval.Nack", &structs.EvalAckRequest{EvalID: evalID, Token: token, WriteRequest: c.s.internalWrite()}, &reply)
}

func (c *leaderClient) SubmitPlan(ctx context.Context, plan *structs.Plan) (*structs.PlanResult, error) {
	if c.local() {
		return c.s.submitPlan(ctx, plan)
	}
	var reply structs.PlanResponse
	if err := c.s.RPC("Plan.Submit", &structs.PlanRequest{Plan: normalizePlan(plan), WriteRequest: c.s.internalWrite()}, &reply); err != nil {
		return nil, err
	}
	completePlanResult(plan, reply.Result)
	return reply.Result, nil
}

func (c *leaderClient) UpdateEvals(ctx context.Context, evals []*structs.Evaluation, token string) error {
	if c.local() {
		_, err := c.s.writeWorkerEvals(evals, token)
		return err
	}
	var reply structs.GenericResponse
	return c.s.RPC("Eval.Update", &structs.EvalUpdateRequest{Evals: evals, EvalToken: token, WriteRequest: c.s.internalWrite()}, &reply)
}

func (c *leaderClient) ReblockEval(ctx context.Context, eval *structs.Evaluation, token string) error {
	if c.local() {
		_, err := c.s.reblockEval(eval, token)
		return err
	}
	var reply structs.GenericResponse
	return c.s.RPC("Eval.Reblock", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}, EvalToken: token, WriteRequest: c.s.internalWrite()}, &reply)
}

// normalizePlan returns plan as it is sent to the leader: allocations that
// run the plan's job (the same *Job) are shallow copies with Job cleared,
// so the request carries that job once. The plan itself is not modified.
// Allocations keeping another job version (e.g. a follow-up recorded on an
// old failed allocation) keep theirs.
func normalizePlan(plan *structs.Plan) *structs.Plan {
	if plan.Job == nil {
		return plan
	}
	shared := false
	for _, allocs := range plan.NodeAllocation {
		for _, a := range allocs {
			if a.Job == plan.Job {
				shared = true
			}
		}
	}
	if !shared {
		return plan
	}
	out := *plan
	out.NodeAllocation = make(map[string][]*structs.Allocation, len(plan.NodeAllocation))
	for node, allocs := range plan.NodeAllocation {
		copied := make([]*structs.Allocation, len(allocs))
		for i, a := range allocs {
			if a.Job == plan.Job {
				c := *a
				c.Job = nil
				a = &c
			}
			copied[i] = a
		}
		out.NodeAllocation[node] = copied
	}
	return &out
}

package server

import (
	"context"
	"time"

	"github.com/drover-project/drover/structs"
)

// Plan is the plan endpoint: workers submit plans to the leader's plan
// queue and wait for the applier's verdict.
type Plan struct {
	srv    *Server
	inproc bool // arguments come from an in-process caller
}

// Submit queues args.Plan and waits for its result. The plan's evaluation
// must be outstanding in the broker under Plan.EvalToken; its nack timer
// is paused while the plan waits.
//
// Over the wire the reply's Result leaves out NodeUpdate and
// NodeAllocation: everything the plan asked for on a node not listed in
// RejectedNodes was committed (nothing, when an AllAtOnce plan has
// rejected nodes), so the submitter rebuilds them from its own plan
// (completePlanResult) instead of receiving every allocation back.
func (p *Plan) Submit(args *structs.PlanRequest, reply *structs.PlanResponse) error {
	s := p.srv
	if done, err := s.forward("Plan.Submit", args, args, reply); done {
		return err
	}
	if args.Plan == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Plan", Message: "missing plan"}}}
	}
	if !p.inproc {
		if err := checkPlanShape(args.Plan); err != nil {
			return err
		}
	}
	result, err := s.submitPlan(s.shutdownCtx, args.Plan)
	if err != nil {
		return err
	}
	if !p.inproc {
		slim := *result
		slim.NodeUpdate, slim.NodeAllocation = nil, nil
		result = &slim
	}
	reply.Result = result
	reply.Index = result.AllocIndex
	return nil
}

// submitPlan is Plan.Submit on the leader. The plan is owned by the plan
// queue and applier from here on.
func (s *Server) submitPlan(ctx context.Context, plan *structs.Plan) (*structs.PlanResult, error) {
	defer measureSince(metricPlanSubmit, time.Now())
	token, ok := s.broker.Outstanding(plan.EvalID)
	switch {
	case !s.broker.Enabled():
		return nil, structs.ErrBrokerDisabled
	case !ok:
		return nil, structs.NewError(structs.ErrCodeNotFound, "evaluation %q of the plan is not outstanding", plan.EvalID)
	case token != plan.EvalToken:
		return nil, structs.NewError(structs.ErrCodeTokenMismatch, "plan token does not match the outstanding delivery of evaluation %q", plan.EvalID)
	}
	if err := s.broker.PauseNackTimeout(plan.EvalID, token); err != nil {
		return nil, err
	}
	defer s.broker.ResumeNackTimeout(plan.EvalID, token)
	pending, err := s.planQueue.Enqueue(plan)
	if err != nil {
		return nil, err
	}
	result, err := pending.WaitContext(ctx)
	if err != nil && ctx.Err() != nil && s.isShutdown() {
		return nil, structs.ErrShutdown
	}
	return result, err
}

// completePlanResult fills a slim result (see Plan.Submit) from the plan
// it answers.
func completePlanResult(plan *structs.Plan, result *structs.PlanResult) {
	if result == nil || result.NodeUpdate != nil || result.NodeAllocation != nil {
		return
	}
	result.NodeUpdate = map[string][]*structs.Allocation{}
	result.NodeAllocation = map[string][]*structs.Allocation{}
	if plan.AllAtOnce && len(result.RejectedNodes) > 0 {
		return
	}
	rejected := make(map[string]bool, len(result.RejectedNodes))
	for _, id := range result.RejectedNodes {
		rejected[id] = true
	}
	for id, allocs := range plan.NodeUpdate {
		if !rejected[id] && len(allocs) > 0 {
			result.NodeUpdate[id] = allocs
		}
	}
	for id, allocs := range plan.NodeAllocation {
		if !rejected[id] && len(allocs) > 0 {
			result.NodeAllocation[id] = allocs
		}
	}
}

package structs

import (
	"errors"
	"strings"
	"time"
)

// RPC types for the scheduling pipeline (eval broker, plan queue), the
// client agent (heartbeats, allocation watch and updates) and the user
// surface (allocations, evaluations, summaries, plans).
//
// RPC method names, with request -> response:
//
//	Eval.Dequeue          EvalDequeueRequest -> EvalDequeueResponse
//	Eval.Ack, Eval.Nack   EvalAckRequest -> GenericResponse
//	Eval.Update           EvalUpdateRequest -> GenericResponse (token required)
//	Eval.Create           EvalUpdateRequest -> GenericResponse (token required)
//	Eval.Reblock          EvalUpdateRequest -> GenericResponse (one blocked eval, token required)
//	Eval.GetEval          EvalSpecificRequest -> SingleEvalResponse
//	Eval.List             EvalListRequest -> EvalListResponse
//	Eval.Allocations      EvalSpecificRequest -> AllocListResponse
//	Plan.Submit           PlanRequest -> PlanResponse
//	Node.Register         NodeRegisterRequest -> NodeUpdateResponse
//	Node.UpdateStatus     NodeUpdateStatusRequest -> NodeUpdateResponse (heartbeat)
//	Node.UpdateAlloc      AllocUpdateRequest -> GenericResponse (batched client updates)
//	Node.GetClientAllocs  NodeSpecificRequest -> NodeClientAllocsResponse (blocking)
//	Node.GetAllocs        NodeSpecificRequest -> NodeAllocsResponse
//	Node.UpdateDrain      NodeUpdateDrainRequest -> NodeUpdateResponse
//	Node.UpdateEligibility NodeUpdateEligibilityRequest -> NodeUpdateResponse
//	Alloc.GetAlloc        AllocSpecificRequest -> SingleAllocResponse
//	Alloc.GetAllocs       AllocsGetRequest -> AllocsGetResponse (blocking)
//	Alloc.List            AllocListRequest -> AllocListResponse
//	Alloc.Stop            AllocStopRequest -> AllocStopResponse
//	Job.Allocations       JobSpecificRequest -> AllocListResponse
//	Job.Evaluations       JobSpecificRequest -> EvalListResponse
//	Job.Summary           JobSpecificRequest -> JobSummaryResponse
//	Job.Plan              JobPlanRequest -> JobPlanResponse
//	Job.Validate          JobValidateRequest -> JobValidateResponse (any server; writes nothing)
//	System.GarbageCollect GenericRequest -> GenericResponse

// EvalDequeueRequest asks the leader's broker for an evaluation.
type EvalDequeueRequest struct {
	Schedulers []string
	Timeout    time.Duration
	// LocalWorker marks a call from a worker in the serving process
	// itself (Server.RPC): the broker wakes such callers before remote
	// ones. It never crosses the wire, so a forwarded request is remote.
	LocalWorker bool `codec:"-" json:"-"`
	WriteRequest
}

// EvalDequeueResponse carries an evaluation (nil on timeout), the token
// that acks it, and the index the worker's state must reach first.
type EvalDequeueResponse struct {
	Eval      *Evaluation
	Token     string
	WaitIndex uint64
	QueryMeta
}

// EvalAckRequest acks or nacks an evaluation.
type EvalAckRequest struct {
	EvalID string
	Token  string
	WriteRequest
}

// PlanRequest submits a plan to the leader's plan queue.
type PlanRequest struct {
	Plan *Plan
	WriteRequest
}

// PlanResponse returns what the applier committed.
type PlanResponse struct {
	Result *PlanResult
	WriteMeta
}

// NodeClientAllocsResponse maps each allocation on a node to its
// AllocModifyIndex, so a client fetches only what changed (Alloc.GetAllocs).
type NodeClientAllocsResponse struct {
	Allocs AllocIndexes
	// Changed holds, when the request asked for them (InlineAllocs), up
	// to that many allocations of Allocs whose AllocModifyIndex is above
	// the request's MinQueryIndex, each with its Job, as Alloc.GetAllocs
	// returns them: read from the same server at the same time or later.
	// One that is not here (over the limit, or collected meanwhile) is
	// fetched as before.
	Changed []*Allocation
	QueryMeta
}

// AllocsGetRequest fetches allocations by ID.
type AllocsGetRequest struct {
	AllocIDs []string
	QueryOptions
}

// AllocsGetResponse returns allocations, each with its Job set.
type AllocsGetResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// AllocStopRequest stops one allocation (it is replaced per its job).
type AllocStopRequest struct {
	AllocID string
	WriteRequest
}

// AllocStopResponse returns the evaluation created for the stop.
type AllocStopResponse struct {
	EvalID string
	Index  uint64
}

// JobSummaryResponse returns a job's summary.
type JobSummaryResponse struct {
	JobSummary *JobSummary
	QueryMeta
}

// JobPlanRequest is a dry run of a job registration.
type JobPlanRequest struct {
	Job  *Job
	Diff bool
	WriteRequest
}

// JobPlanResponse says what registering the job would do.
type JobPlanResponse struct {
	Annotations        *PlanAnnotations
	FailedTGAllocs     map[string]*AllocMetric
	JobModifyIndex     uint64
	CreatedEvals       []*Evaluation
	Diff               *JobDiff
	NextPeriodicLaunch time.Time
	Warnings           string
	WriteMeta
}

// JobValidateRequest asks a server to check a job as registering it would,
// without writing anything.
type JobValidateRequest struct {
	Job *Job
	WriteRequest
}

// JobValidateResponse is Nomad's answer to a job validation: the problems
// found, one per entry, and all of them in Error. No problem means the job
// would be accepted.
type JobValidateResponse struct {
	// DriverConfigValidated is true: servers check each task's config
	// against its driver's schema.
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}

// SetProblems lists err's problems in r when err is a *ValidationError and
// returns nil; any other error is returned as it is.
func (r *JobValidateResponse) SetProblems(err error) error {
	var v *ValidationError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &v):
		return err
	}
	r.ValidationErrors = v.Messages()
	r.Error = strings.Join(r.ValidationErrors, "\n")
	return nil
}

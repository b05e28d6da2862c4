package scheduler

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// A state snapshot is what the worker hands a scheduler.
var _ State = (*state.StateSnapshot)(nil)

// State is the read-only view of the cluster a scheduler works from. It is
// a subset of *state.StateSnapshot's read methods. Lookups by ID return an
// error matching structs.ErrNotFound when the object is absent.
//
// Objects returned by State are shared with other readers: the scheduler
// never modifies them (it copies what it changes).
type State interface {
	// JobByID returns the job, or an error matching structs.ErrNotFound.
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	// NodeView returns the nodes, shared with other readers of the same
	// version of the nodes table (see state.NodeView); never modified.
	NodeView() (*state.NodeView, error)
	// AllocsByJob returns every allocation of the job, terminal ones too.
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Allocation, error)
	// NodeUsage returns the summed resources and number of the node's live
	// (non-terminal) allocations, in O(1); zero for a node without any.
	NodeUsage(ws memdb.WatchSet, nodeID string) (structs.NodeUsage, error)
	// NodePorts returns the ports the node's live allocations hold (nil:
	// none), shared: never modified. The scheduler reads it only for
	// nodes it examines for a group that asks for ports.
	NodePorts(ws memdb.WatchSet, nodeID string) (*structs.NodePorts, error)
	// AllocsByNode returns every allocation on the node, terminal ones
	// too. The scheduler reads it only when it looks for allocations to
	// preempt.
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	// SchedulerConfig returns the scheduler configuration in force (the
	// default when none was set); never modified.
	SchedulerConfig(ws memdb.WatchSet) (uint64, *structs.SchedulerConfiguration, error)
	// LatestIndex is the highest Raft index the view includes.
	LatestIndex() (uint64, error)
	// LatestDeploymentByJobID returns the job's newest deployment, or nil.
	// The scheduler reads it only for jobs with an update block (and
	// stopped or purged jobs, whose running deployment it cancels).
	LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error)
}

// Planner is how a scheduler acts on the cluster. The worker implements it
// by sending plans to the leader's plan applier and evaluations to Raft;
// the test Harness implements it over a real state store.
type Planner interface {
	// SubmitPlan submits a plan. When the result has a RefreshIndex (part
	// of the plan was rejected), the returned State is a view at least as
	// new as that index, and the scheduler retries what is left with it.
	SubmitPlan(*structs.Plan) (*structs.PlanResult, State, error)
	// UpdateEval records the final state of the evaluation being processed.
	UpdateEval(*structs.Evaluation) error
	// CreateEval creates a new evaluation (a follow-up or a blocked one).
	CreateEval(*structs.Evaluation) error
	// ReblockEval puts a blocked evaluation back into the blocked set with
	// updated class eligibility.
	ReblockEval(*structs.Evaluation) error
}

// Scheduler processes one evaluation at a time. Process returns an error
// only when it could not record an outcome (the planner failed); an
// evaluation that could not be fully placed is still a success.
type Scheduler interface {
	Process(*structs.Evaluation) error
}

// Factory builds a scheduler for one evaluation. now is the only clock the
// scheduler reads.
type Factory func(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler

// BuiltinSchedulers maps a job type to its scheduler.
var BuiltinSchedulers = map[string]Factory{
	structs.JobTypeService:  NewServiceScheduler,
	structs.JobTypeBatch:    NewBatchScheduler,
	structs.JobTypeSystem:   NewSystemScheduler,
	structs.JobTypeSysBatch: NewSystemScheduler,
}

// NewScheduler returns the scheduler for an evaluation type, or an error
// for an unknown type.
func NewScheduler(name string, logger hclog.Logger, state State, planner Planner, now func() time.Time) (Scheduler, error) {
	f, ok := BuiltinSchedulers[name]
	if !ok {
		return nil, structs.NewError(structs.ErrCodeInvalid, "unknown scheduler %q", name)
	}
	return f(logger, state, planner, now), nil
}

// Retry limits: how many times a scheduler submits a plan without making
// progress before it gives up and leaves a follow-up evaluation (as Nomad).
const (
	maxServiceAttempts = 5
	maxBatchAttempts   = 2
	maxSystemAttempts  = 5

	// maxAttemptsFollowupWait is how long the follow-up evaluation created
	// after too many rejected plans waits before it runs.
	maxAttemptsFollowupWait = 5 * time.Second
)

// errMaxAttempts ends a retry loop that made no progress.
type errMaxAttempts struct{ attempts int }

func (e errMaxAttempts) Error() string {
	return fmt.Sprintf("maximum attempts reached (%d)", e.attempts)
}

// attemptFn runs one scheduling attempt. done means the plan was fully
// committed (or there was nothing to do); progress means some of it was.
type attemptFn func() (done, progress bool, err error)

// retryAttempts runs fn until it is done, an error occurs, or it fails
// limit times in a row without progress (progress resets the count).
func retryAttempts(limit int, fn attemptFn) error {
	for failures := 0; failures < limit; {
		done, progress, err := fn()
		if err != nil || done {
			return err
		}
		if progress {
			failures = 0
		} else {
			failures++
		}
	}
	return errMaxAttempts{attempts: limit}
}

// submitPlan submits plan and reports whether everything was committed,
// whether anything was, and the state to retry with.
func submitPlan(planner Planner, plan *structs.Plan, cur State) (done, progress bool, next State, err error) {
	result, newState, err := planner.SubmitPlan(plan)
	if err != nil {
		return false, false, cur, fmt.Errorf("submitting plan: %w", err)
	}
	if result == nil {
		return false, false, cur, fmt.Errorf("submitting plan: planner returned no result")
	}
	full, _, committed := result.FullCommit(plan)
	progress = committed > 0 || len(result.NodeUpdate) > 0
	if result.RefreshIndex != 0 {
		if newState == nil {
			return false, progress, cur, fmt.Errorf("submitting plan: refresh index %d without a state", result.RefreshIndex)
		}
		return false, progress, newState, nil
	}
	return full, progress, cur, nil
}

package structs

import "time"

// Evaluation statuses.
const (
	EvalStatusBlocked   = "blocked"
	EvalStatusPending   = "pending"
	EvalStatusComplete  = "complete"
	EvalStatusFailed    = "failed"
	EvalStatusCancelled = "canceled"
)

// What caused an evaluation.
const (
	EvalTriggerJobRegister       = "job-register"
	EvalTriggerJobDeregister     = "job-deregister"
	EvalTriggerNodeUpdate        = "node-update"
	EvalTriggerNodeDrain         = "node-drain"
	EvalTriggerAllocStop         = "alloc-stop"
	EvalTriggerRetryFailedAlloc  = "alloc-failure"
	EvalTriggerQueuedAllocs      = "queued-allocs"
	EvalTriggerRollingUpdate     = "rolling-update"
	EvalTriggerDeploymentWatcher = "deployment-watcher"
	EvalTriggerFailedFollowUp    = "failed-follow-up"
	EvalTriggerMaxPlans          = "max-plan-attempts"
	EvalTriggerRetryFailed       = "retry-failed"
	EvalTriggerReschedule        = "alloc-reschedule"
	EvalTriggerScheduled         = "scheduled"
	EvalTriggerPreemption        = "preemption"
	EvalTriggerScaling           = "job-scaling"
	EvalTriggerMaxDisconnect     = "max-disconnect-timeout"
	EvalTriggerReconnect         = "reconnect"
	EvalTriggerNodeDown          = "node-down"
	EvalTriggerSnapshotRestore   = "snapshot-restore" // every job, after an operator snapshot restore
	CoreJobEvalGC                = "eval-gc"
	CoreJobNodeGC                = "node-gc"
	CoreJobJobGC                 = "job-gc"
	CoreJobForceGC               = "force-gc"
	JobTypeCore                  = "_core"
	CoreJobPriority              = MaxPriority * 2
	DefaultFailedEvalFollowupMin = time.Minute
)

// Evaluation is a request to reconcile a job with the cluster: the unit of
// work the eval broker hands to schedulers.
type Evaluation struct {
	ID                   string            `codec:",omitempty"`
	Namespace            string            `codec:",omitempty"`
	Priority             int               `codec:",omitempty"`
	Type                 string            `codec:",omitempty"`
	TriggeredBy          string            `codec:",omitempty"`
	JobID                string            `codec:",omitempty"`
	JobModifyIndex       uint64            `codec:",omitempty"`
	NodeID               string            `codec:",omitempty"`
	NodeModifyIndex      uint64            `codec:",omitempty"`
	DeploymentID         string            `codec:",omitempty"`
	Status               string            `codec:",omitempty"`
	StatusDescription    string            `codec:",omitempty"`
	Wait                 time.Duration     `codec:",omitempty"`
	WaitUntil            time.Time         `codec:",omitempty"`
	NextEval             string            `codec:",omitempty"`
	PreviousEval         string            `codec:",omitempty"`
	BlockedEval          string            `codec:",omitempty"`
	RelatedEvals         []*EvaluationStub `json:",omitempty"`
	FailedTGAllocs       map[string]*AllocMetric
	ClassEligibility     map[string]bool
	EscapedComputedClass bool `codec:",omitempty"`
	AnnotatePlan         bool `codec:",omitempty"`
	QueuedAllocations    map[string]int
	LeaderACL            string `json:"-"`
	SnapshotIndex        uint64 `codec:",omitempty"`
	CreateIndex          uint64 `codec:",omitempty"`
	ModifyIndex          uint64 `codec:",omitempty"`
	CreateTime           int64  `codec:",omitempty"`
	ModifyTime           int64  `codec:",omitempty"`
}

// EvaluationStub is the summary form of an evaluation.
type EvaluationStub struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	NodeID            string
	DeploymentID      string
	Status            string
	StatusDescription string
	WaitUntil         time.Time
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	CreateIndex       uint64
	ModifyIndex       uint64
	CreateTime        int64
	ModifyTime        int64
}

// TerminalStatus reports whether the evaluation needs no more work.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// ShouldEnqueue reports whether the broker should take this evaluation.
func (e *Evaluation) ShouldEnqueue() bool { return e.Status == EvalStatusPending }

// ShouldBlock reports whether the evaluation belongs in blocked evals.
func (e *Evaluation) ShouldBlock() bool { return e.Status == EvalStatusBlocked }

// NewEval returns a pending evaluation for a job.
func NewEval(job *Job, trigger string, now time.Time) *Evaluation {
	return &Evaluation{
		ID: GenerateUUID(), Namespace: job.Namespace, Priority: job.Priority,
		Type: job.Type, TriggeredBy: trigger, JobID: job.ID,
		JobModifyIndex: job.JobModifyIndex, Status: EvalStatusPending,
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
}

// Stub returns the summary form.
func (e *Evaluation) Stub() *EvaluationStub {
	return &EvaluationStub{
		ID: e.ID, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
		TriggeredBy: e.TriggeredBy, JobID: e.JobID, NodeID: e.NodeID,
		DeploymentID: e.DeploymentID, Status: e.Status,
		StatusDescription: e.StatusDescription, WaitUntil: e.WaitUntil,
		NextEval: e.NextEval, PreviousEval: e.PreviousEval, BlockedEval: e.BlockedEval,
		CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex,
		CreateTime: e.CreateTime, ModifyTime: e.ModifyTime,
	}
}

// CreateBlockedEval returns a blocked follow-up recording which node classes
// were eligible, so the blocked-evals tracker knows what capacity could help.
func (e *Evaluation) CreateBlockedEval(classEligibility map[string]bool, escaped bool, failed map[string]*AllocMetric, now time.Time) *Evaluation {
	return &Evaluation{
		ID: GenerateUUID(), Namespace: e.Namespace, Priority: e.Priority,
		Type: e.Type, TriggeredBy: EvalTriggerQueuedAllocs, JobID: e.JobID,
		JobModifyIndex: e.JobModifyIndex, Status: EvalStatusBlocked,
		PreviousEval: e.ID, FailedTGAllocs: failed, ClassEligibility: classEligibility,
		EscapedComputedClass: escaped, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
}

// NextRollingEval / follow-up: a pending eval for the same job after wait.
func (e *Evaluation) CreateFollowUpEval(trigger string, wait time.Duration, now time.Time) *Evaluation {
	return &Evaluation{
		ID: GenerateUUID(), Namespace: e.Namespace, Priority: e.Priority,
		Type: e.Type, TriggeredBy: trigger, JobID: e.JobID,
		JobModifyIndex: e.JobModifyIndex, Status: EvalStatusPending,
		Wait: wait, WaitUntil: now.Add(wait), PreviousEval: e.ID,
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
}

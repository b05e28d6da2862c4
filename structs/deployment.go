package structs

import (
	"slices"
	"time"
)

// Deployments: the rollout of one version of a service job whose groups
// have an update block (structs/update.go). The scheduler creates one when
// the job changes and records its placements in it; clients report each
// allocation's health (AllocDeploymentStatus); the leader's deployment
// watcher moves the deployment on (next batch, promotion, success,
// failure, revert). Shapes and words are Nomad's.

// Deployment statuses, as in Nomad.
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
)

// Deployment status descriptions, Nomad's words (its CLI and UI show them).
const (
	DeploymentStatusDescriptionRunning               = "Deployment is running"
	DeploymentStatusDescriptionRunningNeedsPromotion = "Deployment is running but requires manual promotion"
	DeploymentStatusDescriptionRunningAutoPromotion  = "Deployment is running pending automatic promotion"
	DeploymentStatusDescriptionPaused                = "Deployment is paused"
	DeploymentStatusDescriptionSuccessful            = "Deployment completed successfully"
	DeploymentStatusDescriptionStoppedJob            = "Cancelled because job is stopped"
	DeploymentStatusDescriptionNewerJob              = "Cancelled due to newer version of job"
	DeploymentStatusDescriptionFailedAllocations     = "Failed due to unhealthy allocations"
	DeploymentStatusDescriptionProgressDeadline      = "Failed due to progress deadline"
	DeploymentStatusDescriptionFailedByUser          = "Deployment marked as failed"
)

// Deployment is the rollout of job version JobVersion. TaskGroups holds
// one state per group with an update block. The store owns stored
// deployments: copy, change, upsert.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	// IsMultiregion is always false (Drover has no multiregion jobs); it
	// is part of Nomad's shape.
	IsMultiregion     bool
	TaskGroups        map[string]*DeploymentState
	Status            string
	StatusDescription string
	// EvalPriority is the priority of the evaluations the deployment
	// creates (the job's).
	EvalPriority int
	CreateIndex  uint64
	ModifyIndex  uint64
	// CreateTime and ModifyTime are Unix nanoseconds, as in Nomad.
	CreateTime int64
	ModifyTime int64
}

// DeploymentState is one group's progress in a deployment.
type DeploymentState struct {
	AutoRevert  bool
	AutoPromote bool
	// ProgressDeadline is the group's update block's; RequireProgressBy
	// is when the group must next see an allocation turn healthy (zero:
	// no deadline yet, or none).
	ProgressDeadline  time.Duration
	RequireProgressBy time.Time
	// Promoted says the group's canaries were promoted.
	Promoted bool
	// PlacedCanaries are the IDs of the canaries placed.
	PlacedCanaries  []string
	DesiredCanaries int
	DesiredTotal    int
	PlacedAllocs    int
	HealthyAllocs   int
	UnhealthyAllocs int
}

// NewDeployment returns a running deployment of job (as stored: its
// version and indexes are set) with no groups yet; now is the creation
// time.
func NewDeployment(job *Job, now time.Time) *Deployment {
	return &Deployment{
		ID:                 GenerateUUID(),
		Namespace:          job.Namespace,
		JobID:              job.ID,
		JobVersion:         job.Version,
		JobModifyIndex:     job.ModifyIndex,
		JobSpecModifyIndex: job.JobModifyIndex,
		JobCreateIndex:     job.CreateIndex,
		TaskGroups:         map[string]*DeploymentState{},
		Status:             DeploymentStatusRunning,
		StatusDescription:  DeploymentStatusDescriptionRunning,
		EvalPriority:       job.Priority,
		CreateTime:         now.UnixNano(),
		ModifyTime:         now.UnixNano(),
	}
}

// Active reports whether the deployment is still rolling out (running or
// paused).
func (d *Deployment) Active() bool {
	return d != nil && (d.Status == DeploymentStatusRunning || d.Status == DeploymentStatusPaused)
}

// RequiresPromotion reports whether a group has canaries that wait for
// promotion.
func (d *Deployment) RequiresPromotion() bool {
	if d == nil || d.Status != DeploymentStatusRunning {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted {
			return true
		}
	}
	return false
}

// HasAutoPromote reports whether every group that waits for promotion
// promotes itself.
func (d *Deployment) HasAutoPromote() bool {
	if d == nil || len(d.TaskGroups) == 0 {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted && !g.AutoPromote {
			return false
		}
	}
	return true
}

// Copy returns a deep copy of the deployment.
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
	for name, g := range d.TaskGroups {
		c.TaskGroups[name] = g.Copy()
	}
	return &c
}

// Copy returns a deep copy of the group's state.
func (s *DeploymentState) Copy() *DeploymentState {
	if s == nil {
		return nil
	}
	c := *s
	c.PlacedCanaries = slices.Clone(s.PlacedCanaries)
	return &c
}

// AllocDeploymentStatus is an allocation's part in a deployment: whether
// it turned healthy (nil: not known yet), when that was set, and whether
// it is a canary.
type AllocDeploymentStatus struct {
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// HasHealth reports whether the allocation's health is known.
func (s *AllocDeploymentStatus) HasHealth() bool { return s != nil && s.Healthy != nil }

// IsHealthy reports whether the allocation is known healthy.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s != nil && s.Healthy != nil && *s.Healthy }

// IsUnhealthy reports whether the allocation is known unhealthy.
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// IsCanary reports whether the allocation is a canary.
func (s *AllocDeploymentStatus) IsCanary() bool { return s != nil && s.Canary }

// Copy returns a copy.
func (s *AllocDeploymentStatus) Copy() *AllocDeploymentStatus {
	if s == nil {
		return nil
	}
	c := *s
	if s.Healthy != nil {
		h := *s.Healthy
		c.Healthy = &h
	}
	return &c
}

// DeploymentStatusUpdate sets a deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// DeploymentStatusUpdateRequest is the Raft entry of a deployment's status
// change, with the job it reverts to (Job, nil: none) and the evaluation
// it creates (Eval, nil: none).
type DeploymentStatusUpdateRequest struct {
	Eval             *Evaluation
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	WriteRequest
}

// DeploymentPromoteRequest promotes the canaries of a deployment: of
// every group (All) or of the named groups.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	WriteRequest
}

// ApplyDeploymentPromoteRequest is the Raft entry of a promotion, with
// the evaluation that places the rest of the groups.
type ApplyDeploymentPromoteRequest struct {
	DeploymentPromoteRequest
	Eval *Evaluation
}

// DeploymentAllocHealthRequest sets allocations' health by hand (a
// deployment whose groups say health_check = "manual", or an operator).
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	WriteRequest
}

// ApplyDeploymentAllocHealthRequest is the Raft entry of a health change
// made through the deployment (by hand, or by the watcher): the health
// set at Timestamp, and what it causes (a status change, a revert, an
// evaluation).
type ApplyDeploymentAllocHealthRequest struct {
	DeploymentAllocHealthRequest
	Timestamp        time.Time
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	Eval             *Evaluation
}

// DeploymentPauseRequest pauses or resumes a deployment.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	WriteRequest
}

// DeploymentFailRequest fails a deployment.
type DeploymentFailRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentSpecificRequest names one deployment.
type DeploymentSpecificRequest struct {
	DeploymentID string
	QueryOptions
}

// DeploymentListRequest lists deployments (of a namespace; Prefix filters
// by ID).
type DeploymentListRequest struct {
	QueryOptions
}

// DeploymentListResponse answers DeploymentListRequest and a job's
// deployments.
type DeploymentListResponse struct {
	Deployments []*Deployment
	QueryMeta
}

// SingleDeploymentResponse answers DeploymentSpecificRequest and a job's
// latest deployment (nil: none).
type SingleDeploymentResponse struct {
	Deployment *Deployment
	QueryMeta
}

// DeploymentUpdateResponse answers a change to a deployment.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	WriteMeta
}

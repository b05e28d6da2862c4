package structs

import (
	"crypto/sha256"
	"encoding/hex"
)

// Scaling: a group's count changed by a scaling request (nomad job scale,
// an autoscaler), bounded by the group's scaling block, with the requests
// kept as scaling events (the last JobTrackedScalingEvents per group).

// Scaling constants, as in Nomad.
const (
	// ScalingPolicyTypeHorizontal is the only policy type of a group's
	// scaling block: it scales the group's count.
	ScalingPolicyTypeHorizontal = "horizontal"
	// Keys of a scaling request's Target.
	ScalingTargetNamespace = "Namespace"
	ScalingTargetJob       = "Job"
	ScalingTargetGroup     = "Group"
	// JobTrackedScalingEvents is how many scaling events the servers keep
	// per group, newest first.
	JobTrackedScalingEvents = 20
)

// ScalingPolicy is a group's scaling block: the bounds a scaling request
// must keep the count within, and the policy an autoscaler reads (stored
// as written, never interpreted by Drover). Max is required; Min defaults
// to the group's count and Enabled to true.
type ScalingPolicy struct {
	Type    string
	Min     int64
	Max     int64
	Enabled bool
	Policy  map[string]any
}

// ScalingEvent records one scaling request (or an autoscaler's report of
// an error) against a group. Count is nil for a request that changed
// nothing; EvalID names the evaluation a count change created. Time is
// in Unix nanoseconds.
type ScalingEvent struct {
	Time          int64
	Count         *int64
	PreviousCount int64
	Message       string
	Error         bool
	Meta          map[string]any
	EvalID        *string
	CreateIndex   uint64
}

// JobScalingEvents are a job's kept scaling events, per group, newest
// first.
type JobScalingEvents struct {
	Namespace     string
	JobID         string
	ScalingEvents map[string][]*ScalingEvent
	ModifyIndex   uint64
}

// ScalingRequest asks to set a group's count (Count) and/or records an
// event about it (Message, Error, Meta). Target names the group
// ("Group"; "Job" must be JobID when set). With JobModifyIndex set, the
// job must still be at that index. PolicyOverride is accepted and changes
// nothing (Drover has no Sentinel policies).
type ScalingRequest struct {
	JobID          string
	Target         map[string]string
	Count          *int64
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool
	JobModifyIndex uint64
	WriteRequest
}

// ScalingEventRegisterRequest is the Raft entry of a scaling request: the
// scaled job and its evaluation (both nil when the count did not change)
// and the event, written in one transaction. The job's namespace is the
// WriteRequest's. A non-zero JobModifyIndex makes the entry conditional:
// it is refused (code conflict, nothing written) unless the stored job is
// still at that index.
type ScalingEventRegisterRequest struct {
	JobID          string
	TaskGroup      string
	Event          *ScalingEvent
	Job            *Job
	Eval           *Evaluation
	JobModifyIndex uint64
	WriteRequest
}

// JobScaleStatusResponse answers a job's scale status read (nil status:
// no such job).
type JobScaleStatusResponse struct {
	JobScaleStatus *JobScaleStatus
	QueryMeta
}

// JobScaleStatus is a job's scaling state per group.
type JobScaleStatus struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*TaskGroupScaleStatus
}

// TaskGroupScaleStatus is one group's count as asked (Desired), its live
// allocations of the current version (Placed), those running (Running),
// and its kept scaling events. Healthy and Unhealthy are what Nomad reads
// from a deployment; Drover runs none, so they are 0, as Nomad's are for
// a job without one.
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Events    []*ScalingEvent
}

// validateScaling checks the group's scaling block and that the count is
// within its bounds, as Nomad does.
func (tg *TaskGroup) validateScaling(v *validator, p, jobType string) {
	sp := tg.Scaling
	if IsSystemType(jobType) {
		v.add(p, "%s jobs cannot be scaled (their count is one per node)", jobType)
	}
	if sp.Type != ScalingPolicyTypeHorizontal {
		v.add(join(p, "Type"), "a group's scaling policy must be of type %q; got %q", ScalingPolicyTypeHorizontal, sp.Type)
	}
	if sp.Min < 0 {
		v.add(join(p, "Min"), "minimum count must be specified and non-negative; got %d", sp.Min)
	}
	switch {
	case sp.Max < 0:
		v.add(join(p, "Max"), "maximum count must be specified and non-negative; got %d", sp.Max)
	case sp.Max < sp.Min:
		v.add(join(p, "Max"), "maximum count must not be less than minimum count (%d < %d)", sp.Max, sp.Min)
	case sp.Max > MaxGroupCount:
		v.add(join(p, "Max"), "must be at most %d; got %d", MaxGroupCount, sp.Max)
	}
	if int64(tg.Count) < sp.Min {
		v.add(join(p, "Min"), "task group count must not be less than minimum count in scaling policy (%d < %d)", tg.Count, sp.Min)
	}
	if sp.Max >= 0 && int64(tg.Count) > sp.Max {
		v.add(join(p, "Max"), "task group count must not be greater than maximum count in scaling policy (%d > %d)", tg.Count, sp.Max)
	}
}

// ScalingPolicyID is the ID of a group's scaling policy, derived from the
// group's place (the same on every server, and the same across versions
// of the job). It has the shape of a UUID.
func ScalingPolicyID(namespace, jobID, group string) string {
	sum := sha256.Sum256([]byte(namespace + "\x00" + jobID + "\x00" + group))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ScalingPolicyListRequest lists the scaling policies of a namespace ("*":
// all), optionally of one job (Job) or of one type (Type).
type ScalingPolicyListRequest struct {
	Job  string
	Type string
	QueryOptions
}

// ScalingPolicyListStub is one policy in a listing.
type ScalingPolicyListStub struct {
	ID          string
	Enabled     bool
	Type        string
	Target      map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// ScalingPolicyListResponse answers ScalingPolicyListRequest, sorted by
// namespace, job and group.
type ScalingPolicyListResponse struct {
	Policies []*ScalingPolicyListStub
	QueryMeta
}

// ScalingPolicySpecificRequest names one policy by ID.
type ScalingPolicySpecificRequest struct {
	ID string
	QueryOptions
}

// ScalingPolicyDetail is a group's scaling policy as an autoscaler reads
// it (Nomad's ScalingPolicy): the block with its ID and target. The
// indexes are the job's creation and its last version's.
type ScalingPolicyDetail struct {
	ID          string
	Type        string
	Target      map[string]string
	Policy      map[string]any
	Min         int64
	Max         int64
	Enabled     bool
	CreateIndex uint64
	ModifyIndex uint64
}

// SingleScalingPolicyResponse answers ScalingPolicySpecificRequest (nil:
// no such policy).
type SingleScalingPolicyResponse struct {
	Policy *ScalingPolicyDetail
	QueryMeta
}

// ScalingPolicies returns the scaling policies of the job's groups (none
// for a stopped job, as Nomad drops them).
func (j *Job) ScalingPolicies() []*ScalingPolicyDetail {
	if j.Stop {
		return nil
	}
	var out []*ScalingPolicyDetail
	for _, tg := range j.TaskGroups {
		sp := tg.Scaling
		if sp == nil {
			continue
		}
		out = append(out, &ScalingPolicyDetail{ID: ScalingPolicyID(j.Namespace, j.ID, tg.Name), Type: sp.Type,
			Target: map[string]string{ScalingTargetNamespace: j.Namespace, ScalingTargetJob: j.ID, ScalingTargetGroup: tg.Name},
			Policy: sp.Policy, Min: sp.Min, Max: sp.Max, Enabled: sp.Enabled, CreateIndex: j.CreateIndex, ModifyIndex: j.JobModifyIndex})
	}
	return out
}

// Stub returns the listing form of the policy.
func (p *ScalingPolicyDetail) Stub() *ScalingPolicyListStub {
	return &ScalingPolicyListStub{ID: p.ID, Enabled: p.Enabled, Type: p.Type, Target: p.Target,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

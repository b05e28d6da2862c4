package structs

import "time"

// Desired statuses: what the servers want.
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Client statuses: what the client reports.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	AllocClientStatusUnknown  = "unknown"
)

// Allocation is one instance of a task group placed on one node.
type Allocation struct {
	ID        string `codec:",omitempty"`
	Namespace string `codec:",omitempty"`
	EvalID    string `codec:",omitempty"`
	Name      string `codec:",omitempty"`
	NodeID    string `codec:",omitempty"`
	NodeName  string `codec:",omitempty"`
	JobID     string `codec:",omitempty"`
	// Job is the job version the allocation runs. Inside a Raft plan entry
	// it is omitted (the plan carries the job once); the FSM points every
	// allocation at the stored job, so readers always see it set.
	Job                *Job                `codec:",omitempty"`
	TaskGroup          string              `codec:",omitempty"`
	AllocatedResources *AllocatedResources `codec:",omitempty"`
	Metrics            *AllocMetric        `codec:",omitempty"`
	DesiredStatus      string              `codec:",omitempty"`
	DesiredDescription string              `codec:",omitempty"`
	DesiredTransition  DesiredTransition   `codec:",omitempty"`
	ClientStatus       string              `codec:",omitempty"`
	ClientDescription  string              `codec:",omitempty"`
	TaskStates         TaskStates
	DeploymentID       string `codec:",omitempty"`
	// DeploymentStatus is the allocation's part in its deployment: its
	// health as the client (or the deployment) set it, and whether it is
	// a canary. Nil outside deployments.
	DeploymentStatus   *AllocDeploymentStatus `codec:",omitempty"`
	FollowupEvalID     string                 `codec:",omitempty"`
	PreviousAllocation string                 `codec:",omitempty"`
	NextAllocation     string                 `codec:",omitempty"`
	RescheduleTracker  *RescheduleTracker     `codec:",omitempty"`
	// PreemptedAllocations are the allocations evicted to make room for
	// this one; PreemptedByAllocation, on an evicted allocation, is the
	// allocation it made room for.
	PreemptedAllocations  []string
	PreemptedByAllocation string `codec:",omitempty"`
	CreateIndex           uint64 `codec:",omitempty"`
	ModifyIndex           uint64 `codec:",omitempty"`
	AllocModifyIndex      uint64 `codec:",omitempty"`
	CreateTime            int64  `codec:",omitempty"`
	ModifyTime            int64  `codec:",omitempty"`
	JobVersion            uint64 `codec:",omitempty"`
}

// AllocatedResources is what the scheduler set aside for an allocation.
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources
	Shared AllocatedSharedResources
}

// AllocatedTaskResources for one task.
type AllocatedTaskResources struct {
	Cpu    AllocatedCpuResources
	Memory AllocatedMemoryResources
	// Networks are the task's legacy network block as granted (ports
	// with values); group ports are in AllocatedSharedResources.
	Networks []*NetworkResource `json:",omitempty"`
}

// AllocatedCpuResources in MHz.
type AllocatedCpuResources struct {
	CpuShares     int64
	ReservedCores []uint16 `json:",omitempty"`
}

// AllocatedMemoryResources in MB.
type AllocatedMemoryResources struct {
	MemoryMB    int64
	MemoryMaxMB int64
}

// AllocatedSharedResources are shared by the group's tasks.
type AllocatedSharedResources struct {
	DiskMB int64
	// Networks are the group's networks as granted (ports with values).
	Networks []*NetworkResource `json:",omitempty"`
	// Ports are every port given to the allocation, by label.
	Ports []AllocatedPortMapping `json:",omitempty"`
}

// Comparable sums the allocation's resources into one vector.
func (a *AllocatedResources) Comparable() ComparableResources {
	var c ComparableResources
	if a == nil {
		return c
	}
	for _, t := range a.Tasks {
		c.CPU += t.Cpu.CpuShares
		c.MemoryMB += t.Memory.MemoryMB
	}
	c.DiskMB = a.Shared.DiskMB
	return c
}

// ComparableResources is a flat resource vector used for fit checks.
type ComparableResources struct {
	CPU      int64
	MemoryMB int64
	DiskMB   int64
}

// Add adds o to c.
func (c *ComparableResources) Add(o ComparableResources) {
	c.CPU += o.CPU
	c.MemoryMB += o.MemoryMB
	c.DiskMB += o.DiskMB
}

// Subtract removes o from c.
func (c *ComparableResources) Subtract(o ComparableResources) {
	c.CPU -= o.CPU
	c.MemoryMB -= o.MemoryMB
	c.DiskMB -= o.DiskMB
}

// Superset reports whether c covers o, and if not, the first exhausted
// dimension ("cpu", "memory" or "disk").
func (c ComparableResources) Superset(o ComparableResources) (bool, string) {
	switch {
	case c.CPU < o.CPU:
		return false, "cpu"
	case c.MemoryMB < o.MemoryMB:
		return false, "memory"
	case c.DiskMB < o.DiskMB:
		return false, "disk"
	}
	return true, ""
}

// DesiredTransition carries server requests to move an allocation.
type DesiredTransition struct {
	Migrate         *bool
	Reschedule      *bool
	ForceReschedule *bool
}

// ShouldMigrate reports whether the allocation was asked to migrate.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// RescheduleTracker records previous reschedules of an allocation's lineage.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent is one reschedule.
type RescheduleEvent struct {
	RescheduleTime int64
	PrevAllocID    string
	PrevNodeID     string
	Delay          time.Duration
}

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// TaskState is a task's lifecycle as reported by its client.
type TaskState struct {
	State       string    `codec:",omitempty"`
	Failed      bool      `codec:",omitempty"`
	Restarts    uint64    `codec:",omitempty"`
	LastRestart time.Time `codec:",omitempty"`
	StartedAt   time.Time `codec:",omitempty"`
	FinishedAt  time.Time `codec:",omitempty"`
	Events      []*TaskEvent
}

// Task event types, as in Nomad.
const (
	TaskReceived       = "Received"
	TaskSetup          = "Task Setup"
	TaskStarted        = "Started"
	TaskTerminated     = "Terminated"
	TaskRestarting     = "Restarting"
	TaskKilling        = "Killing"
	TaskKilled         = "Killed"
	TaskNotRestarting  = "Not Restarting"
	TaskDriverFailure  = "Driver Failure"
	TaskFailedValidate = "Failed Validation"
	TaskSetupFailure   = "Setup Failure"
	// Template events: a first rendering waiting for data ("Missing:
	// ..."), a restart or signal asked for by a re-rendered template, and
	// a change_script's outcome.
	TaskTemplate      = "Template"
	TaskRestartSignal = "Restart Signaled"
	TaskSignaling     = "Signaling"
	TaskHookMessage   = "Task hook message"
	TaskHookFailed    = "Task hook failed"
	// Artifact events: the client starts fetching a task's artifacts, or
	// one could not be fetched (DownloadError says why).
	TaskDownloadingArtifacts   = "Downloading Artifacts"
	TaskArtifactDownloadFailed = "Failed Artifact Download"
	// TaskWaitingShuttingDownDelay: the task's services are deregistered
	// and the client waits its shutdown_delay before killing it.
	TaskWaitingShuttingDownDelay = "Waiting for shutdown delay"
)

// TaskEvent is one event in a task's life.
type TaskEvent struct {
	Type           string `codec:",omitempty"`
	Time           int64  `codec:",omitempty"`
	DisplayMessage string `codec:",omitempty"`
	Details        map[string]string
	Message        string        `codec:",omitempty"`
	ExitCode       int           `codec:",omitempty"`
	Signal         int           `codec:",omitempty"`
	KillTimeout    time.Duration `codec:",omitempty"`
	KillError      string        `codec:",omitempty"`
	KillReason     string        `codec:",omitempty"`
	StartDelay     int64         `codec:",omitempty"`
	DriverError    string        `codec:",omitempty"`
	RestartReason  string        `codec:",omitempty"`
	FailsTask      bool          `codec:",omitempty"`
	// TaskSignal is the signal a Signaling event sent ("SIGHUP").
	TaskSignal string `codec:",omitempty"`
	// DownloadError is why an artifact could not be fetched.
	DownloadError string `codec:",omitempty"`
	// NodeFault is set on a failure the client attributes to its node,
	// not to the job: one of the NodeFault* kinds (structs/quarantine.go).
	// The servers count these faults toward the node's quarantine.
	NodeFault string `codec:",omitempty" json:",omitempty"`
}

// AllocMetric records how placement went: what filtered nodes out, what was
// exhausted, and the scores. Stored on evaluations as FailedTGAllocs.
type AllocMetric struct {
	NodesEvaluated     int `codec:",omitempty"`
	NodesFiltered      int `codec:",omitempty"`
	NodesInPool        int `codec:",omitempty"`
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int `codec:",omitempty"`
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	Scores             map[string]float64 `json:",omitempty"`
	ScoreMetaData      []*NodeScoreMeta
	AllocationTime     time.Duration `codec:",omitempty"`
	CoalescedFailures  int           `codec:",omitempty"`
}

// NodeScoreMeta is one node's scores.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// TerminalStatus reports whether the allocation is stopped or finished.
func (a *Allocation) TerminalStatus() bool {
	switch a.DesiredStatus {
	case AllocDesiredStatusStop, AllocDesiredStatusEvict:
		return true
	}
	return a.ClientTerminalStatus()
}

// ClientTerminalStatus reports whether the client has finished with it.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// ServerTerminalStatus reports whether the servers want it stopped.
func (a *Allocation) ServerTerminalStatus() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// AllocListStub is the summary returned by allocation listings.
type AllocListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobType            string
	JobVersion         uint64
	TaskGroup          string
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         TaskStates
	DeploymentStatus   *AllocDeploymentStatus
	FollowupEvalID     string
	RescheduleTracker  *RescheduleTracker
	// PreemptedAllocations and PreemptedByAllocation are the
	// allocation's (see Allocation).
	PreemptedAllocations  []string
	PreemptedByAllocation string
	CreateIndex           uint64
	ModifyIndex           uint64
	CreateTime            int64
	ModifyTime            int64
}

// Stub returns the listing form.
func (a *Allocation) Stub() *AllocListStub {
	s := &AllocListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace,
		NodeID: a.NodeID, NodeName: a.NodeName, JobID: a.JobID,
		JobVersion: a.JobVersion, TaskGroup: a.TaskGroup,
		DesiredStatus: a.DesiredStatus, DesiredDescription: a.DesiredDescription,
		ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
		TaskStates: a.TaskStates, DeploymentStatus: a.DeploymentStatus, FollowupEvalID: a.FollowupEvalID,
		RescheduleTracker: a.RescheduleTracker, PreemptedAllocations: a.PreemptedAllocations,
		PreemptedByAllocation: a.PreemptedByAllocation, CreateIndex: a.CreateIndex,
		ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if a.Job != nil {
		s.JobType = a.Job.Type
	}
	return s
}

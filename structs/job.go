package structs

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job types, as in Nomad.
const (
	JobTypeService = "service"
	JobTypeBatch   = "batch"
	JobTypeSystem  = "system"
	// JobTypeSysBatch jobs run to completion once on every eligible node
	// (the system scheduler's node iteration with batch semantics).
	JobTypeSysBatch = "sysbatch"
)

// IsSystemType reports whether jobs of the type run one allocation per
// node (system and sysbatch).
func IsSystemType(jobType string) bool { return jobType == JobTypeSystem || jobType == JobTypeSysBatch }

// IsBatchType reports whether jobs of the type run to completion (batch
// and sysbatch): a successful exit ends a task.
func IsBatchType(jobType string) bool { return jobType == JobTypeBatch || jobType == JobTypeSysBatch }

// Job statuses.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Limits that protect the cluster from oversized input.
const (
	DefaultNamespace      = "default"
	DefaultRegion         = "global"
	DefaultPriority       = 50
	MinPriority           = 1
	MaxPriority           = 100
	MaxGroupCount         = 10000
	MaxGroupsPerJob       = 100
	MaxTasksPerGroup      = 100
	MaxNameLength         = 128
	MaxJobSize            = 1 << 20 // encoded job, bytes
	MinMemoryMB           = 10
	MinCPU                = 1
	DefaultTaskCPU        = 100
	DefaultTaskMemoryMB   = 300
	DefaultKillTimeout    = 5 * time.Second
	MaxKillTimeout        = 24 * time.Hour
	DefaultMigrateMaxPar  = 1
	maxConstraintsPerList = 100
	// JobTrackedVersions is how many versions of a job the servers keep,
	// the current one included (Nomad's default; the server option
	// job_tracked_versions changes it).
	JobTrackedVersions = 6
)

// Upper bounds of one task's resource asks. They are far beyond any
// machine (16.7 million MHz is 4,000 cores at 4.2 GHz; 64 TiB of memory;
// 1 PiB of disk) and small enough that no sum the scheduler forms can
// overflow an int: a job's whole ask, MaxGroupsPerJob groups of
// MaxGroupCount allocations of MaxTasksPerGroup tasks, stays below 2^57.
// An ask that wrapped around when summed would fit any node.
const (
	MaxTaskCPU      = 1 << 24 // MHz
	MaxTaskCores    = 1 << 14
	MaxTaskMemoryMB = 1 << 26
	MaxTaskDiskMB   = 1 << 30
)

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// ValidName reports why s is not a valid ID or name, or "" when it is.
func ValidName(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > MaxNameLength:
		return "must be at most 128 characters"
	case !nameRe.MatchString(s):
		return "may contain only letters, digits, '_', '.' and '-'"
	case strings.Contains(s, ".."):
		return "must not contain '..'"
	}
	return ""
}

// Job is the unit users submit: one or more task groups to run.
type Job struct {
	Region      string
	Namespace   string
	ID          string
	Name        string
	Type        string
	Priority    int
	AllAtOnce   bool
	Datacenters []string
	// NodePool is the pool whose nodes the job places on: "default" when
	// unset, "all" for every node (structs/node_pool.go).
	NodePool    string
	Constraints []*Constraint
	// Affinities and Spreads score placement for every group
	// (structs/affinity.go).
	Affinities []*Affinity
	Spreads    []*Spread
	TaskGroups []*TaskGroup
	Meta       map[string]string
	// Update is the job's update block (structs/update.go): the groups
	// without their own take it, and a group's own arguments go over it.
	Update *UpdateStrategy `codec:",omitempty"`

	// Periodic makes the job a template the leader launches as child jobs
	// on a cron schedule (structs/periodic.go); ParentID names the job a
	// child was launched from.
	Periodic *PeriodicConfig
	ParentID string
	// ParameterizedJob makes the job a template run only by a dispatch
	// (structs/dispatch.go); a dispatched child has Dispatched set, its
	// Payload and the request's IdempotencyToken.
	ParameterizedJob         *ParameterizedJobConfig
	Payload                  []byte
	Dispatched               bool
	DispatchIdempotencyToken string

	// Stop marks the job as stopped; its allocations are stopped but the
	// job is kept until garbage collection or a purge.
	Stop              bool
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64

	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
}

// TaskGroup is a set of tasks placed together on one node, Count times.
type TaskGroup struct {
	Name        string
	Count       int
	Constraints []*Constraint
	// Affinities and Spreads score the group's placements, with the
	// job's (structs/affinity.go).
	Affinities       []*Affinity
	Spreads          []*Spread
	Tasks            []*Task
	RestartPolicy    *RestartPolicy
	ReschedulePolicy *ReschedulePolicy
	Migrate          *MigrateStrategy
	// Update is the group's update block (nil: none): a job change rolls
	// out through a deployment paced by it (structs/update.go).
	Update *UpdateStrategy `codec:",omitempty"`
	// Networks is the group's network block (at most one): the ports its
	// allocations need on the node.
	Networks []*NetworkResource
	Services []*Service
	// Scaling is the group's scaling block (nil: none): the bounds of
	// its count, checked at registration and by scaling requests.
	Scaling *ScalingPolicy
	Meta    map[string]string
	// MaxClientDisconnect, StopAfterClientDisconnect and Disconnect say
	// what happens to the allocations of a client that stops heartbeating
	// (structs/disconnect.go); nil: Nomad's default, lost and replaced.
	MaxClientDisconnect       *time.Duration      `codec:",omitempty"`
	StopAfterClientDisconnect *time.Duration      `codec:",omitempty"`
	Disconnect                *DisconnectStrategy `codec:",omitempty"`
	// ShutdownDelay is how long the client waits, once the group's
	// services are deregistered, before it kills the tasks (nil: none);
	// a task's own ShutdownDelay adds to it.
	ShutdownDelay *time.Duration `codec:",omitempty"`
	// Volumes are the group's volume blocks by name (structs/volume.go):
	// host volumes its allocations need on their node.
	Volumes map[string]*VolumeRequest
	// EphemeralDisk is the group's ephemeral_disk block (nil: Nomad's
	// defaults, not sticky).
	EphemeralDisk *EphemeralDisk `codec:",omitempty"`
}

// Task is one process run by a driver.
type Task struct {
	Name        string
	Driver      string
	User        string
	Config      map[string]any
	Env         map[string]string
	Constraints []*Constraint
	// Affinities score the placements of the task's group, with the
	// group's and the job's.
	Affinities  []*Affinity
	Resources   *Resources
	Meta        map[string]string
	KillTimeout time.Duration
	KillSignal  string
	Leader      bool
	Services    []*Service
	// Templates are rendered into the task's directory before it starts
	// (structs/template.go).
	Templates []*Template
	// Artifacts are fetched into the task's directory before it starts
	// (structs/artifact.go), before its templates render.
	Artifacts []*TaskArtifact
	// DispatchPayload names the file the payload of a dispatched job is
	// written to, under local/.
	DispatchPayload *DispatchPayloadConfig
	// Lifecycle makes the task a prestart, poststart or poststop task of
	// its group (structs/lifecycle.go); nil: a main task.
	Lifecycle *TaskLifecycleConfig `codec:",omitempty"`
	// Identity is the task's default workload identity block: whether
	// the client hands the task its identity token (NOMAD_TOKEN with Env,
	// secrets/nomad_token with File). Every task may fetch its identity
	// for templates whatever this says; nil: the token is not exposed.
	Identity *WorkloadIdentity `codec:",omitempty"`
	// RestartPolicy is the task's own restart block, laid over the
	// group's at registration (nil: the group's applies).
	RestartPolicy *RestartPolicy `codec:",omitempty"`
	// LogConfig is the task's logs block (nil: the client's defaults).
	LogConfig *LogConfig `codec:",omitempty"`
	// ShutdownDelay is how long the client waits between deregistering
	// the task's services and killing it.
	ShutdownDelay time.Duration `codec:",omitempty"`
	// VolumeMounts mount the group's volumes into the task directory.
	VolumeMounts []*VolumeMount
}

// WorkloadIdentity is a task's identity block (Nomad's api.WorkloadIdentity,
// the parts Drover acts on). Only the default identity exists: Name is ""
// or "default".
type WorkloadIdentity struct {
	Name string
	Env  bool
	File bool
}

// Resources a task asks for. CPU is in MHz, memory in MB.
type Resources struct {
	CPU      int
	Cores    int
	MemoryMB int
	// MemoryMaxMB is the memory the task may use beyond MemoryMB when the
	// node has it (memory oversubscription); placement counts MemoryMB.
	// Only drivers that can enforce it accept it (driverspec).
	MemoryMaxMB int `codec:",omitempty"`
	DiskMB      int
	// Networks is the legacy task-level network block (at most one, host
	// mode): its ports are granted to the allocation like the group's and
	// recorded on the task's AllocatedTaskResources, as Nomad does.
	Networks []*NetworkResource
}

// Constraint operands.
const (
	ConstraintEqual            = "="
	ConstraintEqualAlt         = "=="
	ConstraintNotEqual         = "!="
	ConstraintLess             = "<"
	ConstraintLessEqual        = "<="
	ConstraintGreater          = ">"
	ConstraintGreaterEqual     = ">="
	ConstraintRegex            = "regexp"
	ConstraintVersion          = "version"
	ConstraintSemver           = "semver"
	ConstraintSetContains      = "set_contains"
	ConstraintSetContainsAll   = "set_contains_all"
	ConstraintSetContainsAny   = "set_contains_any"
	ConstraintAttributeIsSet   = "is_set"
	ConstraintAttributeIsUnset = "is_not_set"
	ConstraintDistinctHosts    = "distinct_hosts"
	ConstraintDistinctProperty = "distinct_property"
)

var validOperands = map[string]bool{
	ConstraintEqual: true, ConstraintEqualAlt: true, ConstraintNotEqual: true,
	ConstraintLess: true, ConstraintLessEqual: true, ConstraintGreater: true,
	ConstraintGreaterEqual: true, ConstraintRegex: true, ConstraintVersion: true,
	ConstraintSemver: true, ConstraintSetContains: true, ConstraintSetContainsAll: true,
	ConstraintSetContainsAny: true, ConstraintAttributeIsSet: true,
	ConstraintAttributeIsUnset: true, ConstraintDistinctHosts: true,
	ConstraintDistinctProperty: true,
}

// Constraint restricts placement: LTarget Operand RTarget, where targets may
// interpolate ${attr.*}, ${node.*} and ${meta.*}.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// String renders the constraint as Nomad's CLI shows it.
func (c *Constraint) String() string {
	return strings.TrimSpace(c.LTarget + " " + c.Operand + " " + c.RTarget)
}

// Restart policy modes.
const (
	RestartPolicyModeFail  = "fail"
	RestartPolicyModeDelay = "delay"
)

// RestartPolicy says how the client restarts a failed task in place.
type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string
	// RenderTemplates renders the task's templates afresh before each
	// restart (instead of keeping the files as last rendered).
	RenderTemplates bool
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// ReschedulePolicy says how servers replace a failed allocation elsewhere.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// MigrateStrategy bounds how many allocations of a group move at once when
// a node drains.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// JobListStub is the summary returned by job listings.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	NodePool          string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *JobSummary
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
}

// JobSummary counts a job's allocations by client status, per group.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// JobChildrenSummary exists for API compatibility (Drover has no child jobs yet).
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// TaskGroupSummary counts one group's allocations by state.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// Stub returns the listing form of the job. summary may be nil.
func (j *Job) Stub(summary *JobSummary) *JobListStub {
	return &JobListStub{
		ID: j.ID, Name: j.Name, Namespace: j.Namespace, Datacenters: j.Datacenters, NodePool: j.NodePool,
		Type: j.Type, Priority: j.Priority, Stop: j.Stop, Status: j.Status,
		ParentID: j.ParentID, Periodic: j.Periodic != nil, ParameterizedJob: j.ParameterizedJob != nil,
		StatusDescription: j.StatusDescription, JobSummary: summary,
		CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex,
		JobModifyIndex: j.JobModifyIndex, SubmitTime: j.SubmitTime,
	}
}

// LookupTaskGroup returns the named group or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// SpecChanged reports whether new differs from j in anything the user
// wrote, as Nomad's Job.SpecChanged does: the fields the servers set
// (Status, StatusDescription, Stable, Version, SubmitTime and the three
// indexes) are ignored, everything else must be deeply equal. Both jobs
// should be canonicalized and in the form the store holds (decoded from
// msgpack), or equal values of different Go types (a []string against a
// []any) count as changes.
func (j *Job) SpecChanged(new *Job) bool {
	if j == nil || new == nil {
		return j != new
	}
	c := *new
	c.Status, c.StatusDescription, c.Stable = j.Status, j.StatusDescription, j.Stable
	c.Version, c.SubmitTime = j.Version, j.SubmitTime
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = j.CreateIndex, j.ModifyIndex, j.JobModifyIndex
	return !reflect.DeepEqual(j, &c)
}

// CombinedTaskMeta returns the meta a task of the group sees: the job's,
// the group's and the task's merged, a later level winning over an earlier
// one. It is what reaches the task as NOMAD_META_*. A group or task the
// job does not have contributes nothing.
func (j *Job) CombinedTaskMeta(group, task string) map[string]string {
	m := maps.Clone(j.Meta)
	if m == nil {
		m = map[string]string{}
	}
	tg := j.LookupTaskGroup(group)
	if tg == nil {
		return m
	}
	maps.Copy(m, tg.Meta)
	if t := tg.LookupTask(task); t != nil {
		maps.Copy(m, t.Meta)
	}
	return m
}

// LookupTask returns the named task or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// NamespacedID identifies the job within the cluster.
func (j *Job) NamespacedID() NamespacedID { return NamespacedID{Namespace: j.Namespace, ID: j.ID} }

// Stopped reports whether the job is stopped (or nil).
func (j *Job) Stopped() bool { return j == nil || j.Stop }

// NamespacedID is a (namespace, id) pair.
type NamespacedID struct {
	Namespace string
	ID        string
}

func (n NamespacedID) String() string { return n.Namespace + "/" + n.ID }

// Canonicalize fills in defaults for fields the user left unset, as Nomad
// does on registration. It mutates j; call it on a fresh or copied job.
// Null task groups and tasks (JSON can hold them) are left for Validate
// to report.
func (j *Job) Canonicalize() {
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.Region == "" {
		j.Region = DefaultRegion
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if j.Type == "" {
		j.Type = JobTypeService
	}
	if j.Priority == 0 {
		j.Priority = DefaultPriority
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	if j.NodePool == "" {
		j.NodePool = NodePoolDefault
	}
	if j.Periodic != nil {
		j.Periodic.canonicalize()
	}
	if j.ParameterizedJob != nil {
		j.ParameterizedJob.canonicalize()
	}
	for _, tg := range j.TaskGroups {
		if tg != nil {
			tg.canonicalize(j)
		}
	}
}

func (tg *TaskGroup) canonicalize(j *Job) {
	if tg.RestartPolicy == nil {
		tg.RestartPolicy = DefaultRestartPolicy(j.Type)
	}
	if tg.ReschedulePolicy == nil {
		tg.ReschedulePolicy = DefaultReschedulePolicy(j.Type)
	}
	if tg.Migrate == nil && j.Type == JobTypeService {
		tg.Migrate = DefaultMigrateStrategy()
	}
	if tg.Update == nil && j.Update != nil {
		tg.Update = j.Update.Copy()
	}
	for _, n := range tg.Networks {
		n.canonicalize()
	}
	for name, v := range tg.Volumes {
		if v != nil && v.Name == "" {
			v.Name = name // the block's label, as Nomad's parser sets it
		}
	}
	if tg.Scaling != nil && tg.Scaling.Type == "" {
		tg.Scaling.Type = ScalingPolicyTypeHorizontal
	}
	if tg.Disconnect != nil {
		tg.Disconnect.canonicalize()
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		if t.Resources != nil {
			for _, n := range t.Resources.Networks {
				n.canonicalize()
			}
		}
		if t.Resources == nil {
			t.Resources = &Resources{}
		}
		if t.Resources.CPU == 0 && t.Resources.Cores == 0 {
			t.Resources.CPU = DefaultTaskCPU
		}
		if t.Resources.MemoryMB == 0 {
			t.Resources.MemoryMB = DefaultTaskMemoryMB
		}
		if t.KillTimeout == 0 {
			t.KillTimeout = DefaultKillTimeout
		}
		// An identity block without a name is the default identity, and
		// Nomad's server names it so.
		if t.Identity != nil && t.Identity.Name == "" {
			t.Identity.Name = WorkloadIdentityDefaultName
		}
		canonicalizeServices(t.Services, j.Name, tg.Name, t.Name)
		for _, tmpl := range t.Templates {
			if tmpl != nil {
				tmpl.canonicalize()
			}
		}
		for _, a := range t.Artifacts {
			if a != nil {
				a.canonicalize()
			}
		}
	}
	canonicalizeServices(tg.Services, j.Name, tg.Name, "")
}

// DefaultRestartPolicy returns Nomad's defaults for the job type.
func DefaultRestartPolicy(jobType string) *RestartPolicy {
	if IsBatchType(jobType) {
		return &RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
	}
	return &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
}

// DefaultMigrateStrategy returns Nomad's migrate defaults.
func DefaultMigrateStrategy() *MigrateStrategy {
	return &MigrateStrategy{MaxParallel: DefaultMigrateMaxPar, HealthCheck: "checks",
		MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
}

// DefaultReschedulePolicy returns Nomad's defaults for the job type; system
// jobs are never rescheduled.
func DefaultReschedulePolicy(jobType string) *ReschedulePolicy {
	switch jobType {
	case JobTypeBatch:
		return &ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: DelayFunctionConstant}
	case JobTypeSystem, JobTypeSysBatch:
		return &ReschedulePolicy{}
	}
	return &ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: DelayFunctionExponential, MaxDelay: time.Hour, Unlimited: true}
}

// Validate reports every problem with the job at once, each naming its field.
// It expects a canonicalized job.
func (j *Job) Validate() error {
	v := &validator{}
	if msg := ValidName(j.ID); msg != "" {
		v.add("ID", "%s", msg)
	}
	if msg := ValidName(j.Name); msg != "" {
		v.add("Name", "%s", msg)
	}
	if msg := ValidName(j.Namespace); msg != "" {
		v.add("Namespace", "%s", msg)
	}
	switch j.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch:
	default:
		v.add("Type", "must be one of service, batch, system, sysbatch; got %q", j.Type)
	}
	if j.Priority < MinPriority || j.Priority > MaxPriority {
		v.add("Priority", "must be between %d and %d; got %d", MinPriority, MaxPriority, j.Priority)
	}
	for i, dc := range j.Datacenters {
		if dc == "" {
			v.add(indexed("Datacenters", i), "must not be empty")
		} else if dc != "*" && ValidName(strings.ReplaceAll(dc, "*", "x")) != "" {
			v.add(indexed("Datacenters", i), "invalid datacenter name %q", dc)
		}
	}
	if j.NodePool != "" && !validNodePoolName.MatchString(j.NodePool) {
		v.add("NodePool", "invalid node pool name %q", j.NodePool)
	}
	validateConstraints(v, "Constraints", j.Constraints)
	validatePreferences(v, "", j.Type, j.Affinities, j.Spreads)
	validateMeta(v, "Meta", j.Meta)
	if j.Periodic != nil {
		j.Periodic.validate(v, j.Type)
	}
	if j.ParameterizedJob != nil {
		j.ParameterizedJob.validate(v, j.Type)
		if j.Periodic != nil {
			v.add("Periodic", "a job cannot be both periodic and parameterized")
		}
	}
	switch {
	case len(j.TaskGroups) == 0:
		v.add("TaskGroups", "a job needs at least one task group")
	case len(j.TaskGroups) > MaxGroupsPerJob:
		v.add("TaskGroups", "at most %d task groups per job; got %d", MaxGroupsPerJob, len(j.TaskGroups))
	}
	seen := map[string]int{}
	for i, tg := range j.TaskGroups {
		p := indexed("TaskGroups", i)
		if tg == nil {
			v.add(p, "must not be null")
			continue
		}
		if prev, ok := seen[tg.Name]; ok && tg.Name != "" {
			v.add(join(p, "Name"), "duplicate group name %q (also TaskGroups[%d])", tg.Name, prev)
		}
		seen[tg.Name] = i
		tg.validate(v, p, j.Type)
	}
	return v.err()
}

func (tg *TaskGroup) validate(v *validator, p, jobType string) {
	if msg := ValidName(tg.Name); msg != "" {
		v.add(join(p, "Name"), "%s", msg)
	}
	if tg.Count < 0 || tg.Count > MaxGroupCount {
		v.add(join(p, "Count"), "must be between 0 and %d; got %d", MaxGroupCount, tg.Count)
	}
	if IsSystemType(jobType) && tg.Count > 1 {
		v.add(join(p, "Count"), "%s jobs run one allocation per node; count must be 0 or 1", jobType)
	}
	validateConstraints(v, join(p, "Constraints"), tg.Constraints)
	validatePreferences(v, p, jobType, tg.Affinities, tg.Spreads)
	validateMeta(v, join(p, "Meta"), tg.Meta)
	if rp := tg.RestartPolicy; rp != nil {
		rp.validate(v, join(p, "RestartPolicy"))
	}
	if d := tg.ShutdownDelay; d != nil && (*d < 0 || *d > MaxKillTimeout) {
		v.add(join(p, "ShutdownDelay"), "must be between 0 and %s", MaxKillTimeout)
	}
	tg.validateVolumes(v, p)
	if rs := tg.ReschedulePolicy; rs != nil {
		rsp := join(p, "ReschedulePolicy")
		if rs.Attempts < 0 {
			v.add(join(rsp, "Attempts"), "must not be negative")
		}
		if rs.Delay < 0 {
			v.add(join(rsp, "Delay"), "must not be negative")
		}
		switch rs.DelayFunction {
		case "", DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci:
		default:
			v.add(join(rsp, "DelayFunction"), "must be constant, exponential or fibonacci; got %q", rs.DelayFunction)
		}
		if rs.MaxDelay < 0 {
			v.add(join(rsp, "MaxDelay"), "must not be negative")
		}
		if rs.Unlimited && rs.Attempts > 0 {
			v.add(join(rsp, "Attempts"), "must be 0 when Unlimited is true")
		}
		if !rs.Unlimited && rs.Attempts > 0 && rs.Interval <= 0 {
			v.add(join(rsp, "Interval"), "must be positive when Attempts is set")
		}
	}
	if m := tg.Migrate; m != nil {
		if jobType != JobTypeService {
			v.add(join(p, "Migrate"), "job type %q does not allow a migrate block (only service jobs migrate)", jobType)
		} else {
			if m.MaxParallel < 0 {
				v.add(join(p, "Migrate.MaxParallel"), "must not be negative")
			}
			// The client judges a replacement's health by these, and
			// drains wait for it (Nomad's choices: no manual health).
			switch m.HealthCheck {
			case "", UpdateHealthCheckChecks, UpdateHealthCheckTaskStates:
			default:
				v.add(join(p, "Migrate.HealthCheck"), "must be %q or %q; got %q", UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, m.HealthCheck)
			}
			if m.MinHealthyTime < 0 {
				v.add(join(p, "Migrate.MinHealthyTime"), "must not be negative; got %s", m.MinHealthyTime)
			}
			if m.HealthyDeadline < 0 {
				v.add(join(p, "Migrate.HealthyDeadline"), "must not be negative; got %s", m.HealthyDeadline)
			}
		}
	}
	if tg.Update != nil {
		tg.Update.validate(v, join(p, "Update"), jobType, tg.Count)
	}
	if sp := tg.Scaling; sp != nil {
		tg.validateScaling(v, join(p, "Scaling"), jobType)
	}
	tg.validateDisconnect(v, p, jobType)
	switch {
	case len(tg.Tasks) == 0:
		v.add(join(p, "Tasks"), "a group needs at least one task")
	case len(tg.Tasks) > MaxTasksPerGroup:
		v.add(join(p, "Tasks"), "at most %d tasks per group; got %d", MaxTasksPerGroup, len(tg.Tasks))
	}
	tg.validateNetworks(v, p)
	seen := map[string]int{}
	for i, t := range tg.Tasks {
		tp := join(p, indexed("Tasks", i))
		if t == nil {
			v.add(tp, "must not be null")
			continue
		}
		if prev, ok := seen[t.Name]; ok && t.Name != "" {
			v.add(join(tp, "Name"), "duplicate task name %q (also Tasks[%d])", t.Name, prev)
		}
		seen[t.Name] = i
		t.validate(v, tp)
		validatePreferences(v, tp, jobType, t.Affinities, nil)
	}
	tg.validateLifecycle(v, p)
	validateServices(v, join(p, "Services"), tg.Services, tg.Tasks, "")
	tg.validateServiceNames(v, p)
	tg.validateServicePorts(v, p)
}

func (t *Task) validate(v *validator, p string) {
	if msg := ValidName(t.Name); msg != "" {
		v.add(join(p, "Name"), "%s", msg)
	}
	if t.Driver == "" {
		v.add(join(p, "Driver"), "must be set")
	} else if ValidName(t.Driver) != "" {
		v.add(join(p, "Driver"), "invalid driver name %q", t.Driver)
	}
	if r := t.Resources; r == nil {
		v.add(join(p, "Resources"), "must be set")
	} else {
		rp := join(p, "Resources")
		if r.CPU < 0 || (r.CPU < MinCPU && r.Cores == 0) {
			v.add(join(rp, "CPU"), "must be at least %d; got %d", MinCPU, r.CPU)
		}
		if r.Cores < 0 {
			v.add(join(rp, "Cores"), "must not be negative")
		}
		if r.MemoryMB < MinMemoryMB {
			v.add(join(rp, "MemoryMB"), "must be at least %d; got %d", MinMemoryMB, r.MemoryMB)
		}
		if r.DiskMB < 0 {
			v.add(join(rp, "DiskMB"), "must not be negative")
		}
		if r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB {
			v.add(join(rp, "MemoryMaxMB"), "must be at least MemoryMB (%d) when set; got %d", r.MemoryMB, r.MemoryMaxMB)
		}
		validateResourceBounds(v, rp, r)
	}
	if t.KillTimeout < 0 || t.KillTimeout > MaxKillTimeout {
		v.add(join(p, "KillTimeout"), "must be between 0 and %s", MaxKillTimeout)
	}
	if t.ShutdownDelay < 0 || t.ShutdownDelay > MaxKillTimeout {
		v.add(join(p, "ShutdownDelay"), "must be between 0 and %s", MaxKillTimeout)
	}
	if t.RestartPolicy != nil {
		t.RestartPolicy.validate(v, join(p, "RestartPolicy"))
	}
	if t.LogConfig != nil {
		t.LogConfig.validate(v, p)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Env)) { // errors in a stable order
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.add(join(p, "Env"), "invalid variable name %q", k)
		}
	}
	validateConstraints(v, join(p, "Constraints"), t.Constraints)
	validateMeta(v, join(p, "Meta"), t.Meta)
	if id := t.Identity; id != nil && id.Name != "" && id.Name != WorkloadIdentityDefaultName {
		v.add(join(join(p, "Identity"), "Name"), "Drover does not support named workload identities (only the default identity); got %q", id.Name)
	}
	validateServices(v, join(p, "Services"), t.Services, nil, t.Name)
	if t.DispatchPayload != nil {
		t.DispatchPayload.validate(v, p)
	}
	if t.Lifecycle != nil {
		t.Lifecycle.validate(v, p)
	}
	validateArtifacts(v, p, t.Artifacts)
	if len(t.Templates) > maxTemplatesPerTask {
		v.add(join(p, "Templates"), "at most %d templates per task; got %d", maxTemplatesPerTask, len(t.Templates))
		return
	}
	for i, tmpl := range t.Templates {
		tp := join(p, indexed("Templates", i))
		if tmpl == nil {
			v.add(tp, "must not be null")
			continue
		}
		tmpl.validate(v, tp)
	}
}

func (rp *RestartPolicy) validate(v *validator, rpp string) {
	if rp.Attempts < 0 {
		v.add(join(rpp, "Attempts"), "must not be negative")
	}
	if rp.Mode != RestartPolicyModeFail && rp.Mode != RestartPolicyModeDelay {
		v.add(join(rpp, "Mode"), "must be %q or %q; got %q", RestartPolicyModeFail, RestartPolicyModeDelay, rp.Mode)
	}
	if rp.Delay < 0 {
		v.add(join(rpp, "Delay"), "must not be negative")
	}
	if rp.Attempts > 0 && rp.Interval < time.Duration(rp.Attempts)*rp.Delay {
		v.add(join(rpp, "Interval"), "must be at least Attempts x Delay (%s)", time.Duration(rp.Attempts)*rp.Delay)
	}
}

// WorkloadIdentityDefaultName is the default identity's name.
const WorkloadIdentityDefaultName = "default"

// validateResourceBounds checks a task's asks against the Max* bounds.
func validateResourceBounds(v *validator, rp string, r *Resources) {
	for _, b := range []struct {
		field    string
		val, max int
		unit     string
	}{
		{"CPU", r.CPU, MaxTaskCPU, " MHz"},
		{"Cores", r.Cores, MaxTaskCores, ""},
		{"MemoryMB", r.MemoryMB, MaxTaskMemoryMB, " MB"},
		{"MemoryMaxMB", r.MemoryMaxMB, MaxTaskMemoryMB, " MB"},
		{"DiskMB", r.DiskMB, MaxTaskDiskMB, " MB"},
	} {
		if b.val > b.max {
			v.add(join(rp, b.field), "must be at most %d%s; got %d", b.max, b.unit, b.val)
		}
	}
}

func validateConstraints(v *validator, p string, cs []*Constraint) {
	if len(cs) > maxConstraintsPerList {
		v.add(p, "at most %d constraints; got %d", maxConstraintsPerList, len(cs))
		return
	}
	for i, c := range cs {
		cp := indexed(p, i)
		if c == nil {
			v.add(cp, "must not be null")
			continue
		}
		op := c.Operand
		if op == "" {
			op = ConstraintEqual
		}
		if !validOperands[op] {
			v.add(join(cp, "Operand"), "unknown operand %q", c.Operand)
			continue
		}
		switch op {
		case ConstraintDistinctHosts:
		case ConstraintDistinctProperty, ConstraintAttributeIsSet, ConstraintAttributeIsUnset:
			if c.LTarget == "" {
				v.add(join(cp, "LTarget"), "must be set for operand %q", op)
			}
		case ConstraintRegex:
			if _, err := regexp.Compile(c.RTarget); err != nil {
				v.add(join(cp, "RTarget"), "invalid regular expression: %v", err)
			}
			if c.LTarget == "" {
				v.add(join(cp, "LTarget"), "must be set")
			}
		default:
			if c.LTarget == "" {
				v.add(join(cp, "LTarget"), "must be set")
			}
		}
	}
}

func validateMeta(v *validator, p string, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) { // errors in a stable order
		if k == "" || strings.ContainsRune(k, 0) {
			v.add(p, "invalid key %q", k)
		}
	}
}

func indexed(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}

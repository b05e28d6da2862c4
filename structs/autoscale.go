package structs

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Autoscaling node pools (Drover's own; Nomad leaves this to a separate
// autoscaler). A PoolAutoscaler, written by an operator, tells the
// leader's autoscaler (server/autoscaler) how to size one node pool: the
// instance types it may create at a provider, their bounds and timers.
// The leader records every instance it creates as a PoolInstance before
// it asks the provider, and every decision as a PoolEvent; all three are
// replicated, so a new leader takes over where the old one stopped.

// Instance states, in the order an instance goes through them.
const (
	// InstanceBooting: created at the provider (or about to be); its
	// node has not yet registered ready with healthy drivers.
	InstanceBooting = "booting"
	// InstanceRunning: its node is ready and has work.
	InstanceRunning = "running"
	// InstanceIdle: its node is ready and has no work (since IdleSince).
	InstanceIdle = "idle"
	// InstanceDraining: its node is draining (behaviour drain); it is
	// shut down once the node has no work left.
	InstanceDraining = "draining"
	// InstanceShuttingDown: the leader decided to destroy it and has not
	// yet seen the provider confirm.
	InstanceShuttingDown = "shutting-down"
	// InstanceGone: destroyed (kept a while for the events and the
	// create throttle, then removed).
	InstanceGone = "gone"
)

// InstanceStates lists the states, in order (metrics use every one).
var InstanceStates = []string{InstanceBooting, InstanceRunning, InstanceIdle, InstanceDraining, InstanceShuttingDown, InstanceGone}

// Idle behaviours of an instance, set by an operator.
const (
	// InstanceBehaviorRun: normal; shut down when idle past the timeout.
	InstanceBehaviorRun = "run"
	// InstanceBehaviorHold: kept, never scheduled on (its node is made
	// ineligible), never shut down.
	InstanceBehaviorHold = "hold"
	// InstanceBehaviorDrain: its node drains, then it is shut down.
	InstanceBehaviorDrain = "drain"
)

// Tags every provider instance of Drover's carries, and the client meta
// keys of the node that boots on it.
const (
	InstanceTagID   = "drover.instance_id"
	InstanceTagPool = "drover.node_pool"
	InstanceTagType = "drover.instance_type"
)

// Default timers of a PoolAutoscaler (a zero field takes them).
const (
	DefaultAutoscaleBootTimeout    = 10 * time.Minute
	DefaultAutoscaleIdleTimeout    = 5 * time.Minute
	DefaultAutoscaleCreateInterval = time.Minute
	DefaultAutoscaleQuotaBackoff   = time.Minute
)

// PoolAutoscaler is the autoscaling configuration of one node pool.
type PoolAutoscaler struct {
	// Pool is the node pool it sizes (it must exist; not a built-in one).
	Pool string
	// Enabled: false creates nothing; the instances still boot, idle
	// out and follow their behaviour.
	Enabled bool
	// Provider names a provider the servers were configured with
	// (server { autoscale_provider "<name>" { ... } }).
	Provider string
	// ProviderOptions are passed to the provider's Create (their meaning
	// is the provider's; the local provider reads none).
	ProviderOptions map[string]string `json:",omitempty"`
	// InstanceTypes are the kinds of instance it may create; it picks the
	// cheapest that fits the queue.
	InstanceTypes []*InstanceType
	// Min and Max bound the instances not gone (Max > 0).
	Min, Max int
	// BootTimeout: an instance whose node is not ready with healthy
	// drivers this long after its creation is destroyed.
	BootTimeout time.Duration
	// IdleTimeout: an instance (behaviour run) whose node has had no work
	// this long is shut down, unless that leaves fewer than Min.
	IdleTimeout time.Duration
	// The create throttle: at most MaxCreatesPerInterval creates in any
	// CreateInterval (0: no limit), at most MaxBooting instances booting
	// at once (0: no limit).
	MaxCreatesPerInterval int
	CreateInterval        time.Duration
	MaxBooting            int
	// QuotaBackoff: after the provider reports a quota error, nothing is
	// created for this long.
	QuotaBackoff time.Duration
	CreateIndex  uint64
	ModifyIndex  uint64
}

// InstanceType is one kind of instance a pool may create.
type InstanceType struct {
	// Name is Drover's name for it (unique in the pool).
	Name string
	// CPU (MHz) and MemoryMB are what its node offers to allocations.
	CPU      int
	MemoryMB int
	// PricePerHour is its cost, in any currency, the same for every type.
	PricePerHour float64
	// ProviderType is the provider's name for it ("" : Name).
	ProviderType string `json:",omitempty"`
}

// Canonicalize fills the default timers.
func (a *PoolAutoscaler) Canonicalize() {
	if a.BootTimeout == 0 {
		a.BootTimeout = DefaultAutoscaleBootTimeout
	}
	if a.IdleTimeout == 0 {
		a.IdleTimeout = DefaultAutoscaleIdleTimeout
	}
	if a.CreateInterval == 0 {
		a.CreateInterval = DefaultAutoscaleCreateInterval
	}
	if a.QuotaBackoff == 0 {
		a.QuotaBackoff = DefaultAutoscaleQuotaBackoff
	}
	for _, t := range a.InstanceTypes {
		if t != nil && t.ProviderType == "" {
			t.ProviderType = t.Name
		}
	}
}

// Validate checks a configuration an operator writes (after
// Canonicalize); each error names its field.
func (a *PoolAutoscaler) Validate() error {
	v := &validator{}
	switch {
	case !validNodePoolName.MatchString(a.Pool):
		v.add("Pool", "invalid node pool name %q", a.Pool)
	case IsBuiltInNodePool(a.Pool):
		v.add("Pool", "node pool %q is built in and cannot be autoscaled", a.Pool)
	}
	if a.Provider == "" {
		v.add("Provider", "must name a provider")
	}
	if len(a.InstanceTypes) == 0 {
		v.add("InstanceTypes", "must list at least one instance type")
	}
	seen := map[string]bool{}
	for i, t := range a.InstanceTypes {
		p := "InstanceTypes[" + strconv.Itoa(i) + "]"
		if t == nil {
			v.add(p, "must not be null")
			continue
		}
		if ValidName(t.Name) != "" || t.Name == "" {
			v.add(p+".Name", "invalid instance type name %q", t.Name)
		} else if seen[t.Name] {
			v.add(p+".Name", "duplicate instance type %q", t.Name)
		}
		seen[t.Name] = true
		if t.CPU <= 0 {
			v.add(p+".CPU", "must be positive; got %d", t.CPU)
		}
		if t.MemoryMB <= 0 {
			v.add(p+".MemoryMB", "must be positive; got %d", t.MemoryMB)
		}
		if t.PricePerHour < 0 || t.PricePerHour != t.PricePerHour {
			v.add(p+".PricePerHour", "must not be negative")
		}
	}
	if a.Max <= 0 {
		v.add("Max", "must be positive; got %d", a.Max)
	}
	if a.Min < 0 || a.Min > a.Max {
		v.add("Min", "must be between 0 and Max (%d); got %d", a.Max, a.Min)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"BootTimeout", a.BootTimeout}, {"IdleTimeout", a.IdleTimeout}, {"CreateInterval", a.CreateInterval}, {"QuotaBackoff", a.QuotaBackoff}} {
		if d.v < 0 {
			v.add(d.name, "must not be negative; got %s", d.v)
		}
	}
	if a.MaxCreatesPerInterval < 0 {
		v.add("MaxCreatesPerInterval", "must not be negative; got %d", a.MaxCreatesPerInterval)
	}
	if a.MaxBooting < 0 {
		v.add("MaxBooting", "must not be negative; got %d", a.MaxBooting)
	}
	validateMeta(v, "ProviderOptions", a.ProviderOptions)
	return v.err()
}

// InstanceType returns the named type, or nil.
func (a *PoolAutoscaler) InstanceType(name string) *InstanceType {
	for _, t := range a.InstanceTypes {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}

// Copy returns a copy that shares nothing with a.
func (a *PoolAutoscaler) Copy() *PoolAutoscaler {
	c := *a
	c.ProviderOptions = maps.Clone(a.ProviderOptions)
	c.InstanceTypes = make([]*InstanceType, len(a.InstanceTypes))
	for i, t := range a.InstanceTypes {
		if t != nil {
			tc := *t
			c.InstanceTypes[i] = &tc
		}
	}
	return &c
}

// PoolInstance is one instance the autoscaler created (or adopted).
type PoolInstance struct {
	// ID is chosen by the leader before the create and tags the
	// provider's instance (InstanceTagID), so a create is never lost.
	ID   string
	Pool string
	// Type is the InstanceType's name; ProviderType the provider's.
	Type         string
	ProviderType string
	PricePerHour float64
	// ProviderID is the provider's own ID of it, once known.
	ProviderID string `json:",omitempty"`
	// State is one of the Instance* states.
	State       string
	StateReason string `json:",omitempty"`
	// Behavior is the operator's idle behaviour: run, hold or drain.
	Behavior string
	// NodeID is the node that registered for it (client meta
	// drover.instance_id), once it did.
	NodeID string `json:",omitempty"`
	// CreateTime, BootTime (node ready) and IdleSince (no work since;
	// 0 while it has work), in Unix nanoseconds.
	CreateTime  int64
	BootTime    int64 `json:",omitempty"`
	IdleSince   int64 `json:",omitempty"`
	GoneTime    int64 `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a copy of i.
func (i *PoolInstance) Copy() *PoolInstance {
	c := *i
	return &c
}

// Gone reports whether the instance is destroyed.
func (i *PoolInstance) Gone() bool { return i.State == InstanceGone }

// Tags are the provider tags of the instance.
func (i *PoolInstance) Tags() map[string]string {
	return map[string]string{InstanceTagID: i.ID, InstanceTagPool: i.Pool, InstanceTagType: i.Type}
}

// Event types of a pool.
const (
	PoolEventCreate   = "create"
	PoolEventBooted   = "booted"
	PoolEventDestroy  = "destroy"
	PoolEventQuota    = "quota"
	PoolEventError    = "error"
	PoolEventAdopt    = "adopt"
	PoolEventBehavior = "behavior"
	PoolEventNoFit    = "no-fit"
	PoolEventLimit    = "limit"
	PoolEventDrain    = "drain"
)

// PoolTrackedEvents is how many events a pool keeps (newest first).
const PoolTrackedEvents = 100

// PoolEvent is one decision of the autoscaler on a pool, with its reason.
type PoolEvent struct {
	Pool string
	// Time in Unix nanoseconds.
	Time int64
	// Type is one of the PoolEvent* types.
	Type string
	// InstanceID is the instance it concerns ("" : the pool).
	InstanceID string `json:",omitempty"`
	// Message says what was decided and why.
	Message string
	// QuotaBackoffUntil, on a quota event, is when creates may resume
	// (Unix nanoseconds); the pool's status keeps it.
	QuotaBackoffUntil int64 `json:",omitempty"`
	CreateIndex       uint64
}

// PoolAutoscaleStatus is what the autoscaler keeps per pool besides its
// instances: its events, newest first, and the end of a quota back-off.
type PoolAutoscaleStatus struct {
	Pool              string
	Events            []*PoolEvent
	QuotaBackoffUntil int64
	ModifyIndex       uint64
}

// PoolAutoscalerUpsertRequest sets (Autoscaler) or deletes (Delete: the
// pool's configuration) a pool's autoscaler configuration. Raft type
// PoolAutoscalerUpsertRequestType.
type PoolAutoscalerUpsertRequest struct {
	Autoscaler *PoolAutoscaler
	Delete     string `codec:",omitempty"`
	WriteRequest
}

// PoolInstanceUpdateRequest is the leader autoscaler's write: instances
// created or changed, instances removed, and events (a quota event sets
// the pool's back-off). Raft type PoolInstanceUpdateRequestType.
type PoolInstanceUpdateRequest struct {
	Instances []*PoolInstance
	Remove    []string
	Events    []*PoolEvent
	WriteRequest
}

// PoolInstanceBehaviorRequest is an operator's hold, drain or run of one
// instance. Raft type PoolInstanceBehaviorRequestType.
type PoolInstanceBehaviorRequest struct {
	InstanceID string
	Behavior   string
	// Time is when the operator asked (Unix nanoseconds; set by the
	// server), for the event.
	Time int64
	WriteRequest
}

// PoolAutoscalerResponse is a pool's configuration (nil: none) and
// status.
type PoolAutoscalerResponse struct {
	Autoscaler *PoolAutoscaler
	Status     *PoolAutoscaleStatus
	QueryMeta
}

// PoolInstancesResponse lists instances, sorted by pool then ID.
type PoolInstancesResponse struct {
	Instances []*PoolInstance
	QueryMeta
}

// SortPoolInstances sorts instances by pool, then creation, then ID.
func SortPoolInstances(list []*PoolInstance) {
	slices.SortFunc(list, func(a, b *PoolInstance) int {
		if c := strings.Compare(a.Pool, b.Pool); c != 0 {
			return c
		}
		if a.CreateTime != b.CreateTime {
			if a.CreateTime < b.CreateTime {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// ValidInstanceBehavior reports whether b is run, hold or drain.
func ValidInstanceBehavior(b string) bool {
	return b == InstanceBehaviorRun || b == InstanceBehaviorHold || b == InstanceBehaviorDrain
}

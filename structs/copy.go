package structs

import (
	"maps"
	"slices"
)

// Deep copies. Objects read from the state store are shared; copy before
// changing anything.

func copySlice[T any](in []*T, cp func(*T) *T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		out[i] = cp(v)
	}
	return out
}

func copyMap[V any](in map[string]*V, cp func(*V) *V) map[string]*V {
	if in == nil {
		return nil
	}
	out := make(map[string]*V, len(in))
	for k, v := range in {
		out[k] = cp(v)
	}
	return out
}

func shallow[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// copyAny deep-copies the JSON-like values found in task configs.
func copyAny(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = copyAny(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyAny(e)
		}
		return out
	case []string:
		return append([]string(nil), t...)
	}
	return v
}

// Copy returns a deep copy of the job.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Datacenters = append([]string(nil), j.Datacenters...)
	c.Constraints = copySlice(j.Constraints, shallow[Constraint])
	c.Affinities = copySlice(j.Affinities, shallow[Affinity])
	c.Spreads = copySlice(j.Spreads, (*Spread).Copy)
	c.TaskGroups = copySlice(j.TaskGroups, (*TaskGroup).Copy)
	c.Meta = maps.Clone(j.Meta)
	c.Periodic = j.Periodic.Copy()
	c.ParameterizedJob = j.ParameterizedJob.Copy()
	c.Update = j.Update.Copy()
	c.Payload = slices.Clone(j.Payload)
	return &c
}

// Copy returns a deep copy of the spread.
func (s *Spread) Copy() *Spread {
	if s == nil {
		return nil
	}
	c := *s
	c.SpreadTarget = copySlice(s.SpreadTarget, shallow[SpreadTarget])
	return &c
}

// Copy returns a deep copy of the group.
func (tg *TaskGroup) Copy() *TaskGroup {
	if tg == nil {
		return nil
	}
	c := *tg
	c.Constraints = copySlice(tg.Constraints, shallow[Constraint])
	c.Affinities = copySlice(tg.Affinities, shallow[Affinity])
	c.Spreads = copySlice(tg.Spreads, (*Spread).Copy)
	c.Tasks = copySlice(tg.Tasks, (*Task).Copy)
	c.RestartPolicy = shallow(tg.RestartPolicy)
	c.ReschedulePolicy = shallow(tg.ReschedulePolicy)
	c.Migrate = shallow(tg.Migrate)
	c.Update = tg.Update.Copy()
	c.Services = copySlice(tg.Services, (*Service).Copy)
	c.Networks = copySlice(tg.Networks, (*NetworkResource).Copy)
	c.Scaling = tg.Scaling.Copy()
	c.Meta = maps.Clone(tg.Meta)
	c.MaxClientDisconnect = shallow(tg.MaxClientDisconnect)
	c.StopAfterClientDisconnect = shallow(tg.StopAfterClientDisconnect)
	c.Disconnect = tg.Disconnect.Copy()
	c.ShutdownDelay = shallow(tg.ShutdownDelay)
	c.Volumes = copyMap(tg.Volumes, shallow[VolumeRequest])
	c.EphemeralDisk = shallow(tg.EphemeralDisk)
	return &c
}

// Copy returns a deep copy of the scaling block.
func (p *ScalingPolicy) Copy() *ScalingPolicy {
	if p == nil {
		return nil
	}
	c := *p
	if p.Policy != nil {
		c.Policy = copyAny(p.Policy).(map[string]any)
	}
	return &c
}

// Copy returns a deep copy of the task.
func (t *Task) Copy() *Task {
	if t == nil {
		return nil
	}
	c := *t
	if t.Config != nil {
		c.Config = copyAny(t.Config).(map[string]any)
	}
	c.Env = maps.Clone(t.Env)
	c.Constraints = copySlice(t.Constraints, shallow[Constraint])
	c.Affinities = copySlice(t.Affinities, shallow[Affinity])
	c.Resources = t.Resources.Copy()
	c.Services = copySlice(t.Services, (*Service).Copy)
	c.Meta = maps.Clone(t.Meta)
	c.Identity = shallow(t.Identity)
	c.Templates = copySlice(t.Templates, (*Template).Copy)
	c.Artifacts = copySlice(t.Artifacts, (*TaskArtifact).Copy)
	c.DispatchPayload = shallow(t.DispatchPayload)
	c.Lifecycle = shallow(t.Lifecycle)
	c.RestartPolicy = shallow(t.RestartPolicy)
	c.LogConfig = shallow(t.LogConfig)
	c.VolumeMounts = copySlice(t.VolumeMounts, shallow[VolumeMount])
	return &c
}

// Copy returns a deep copy of the node.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Attributes = maps.Clone(n.Attributes)
	c.NodeResources = shallow(n.NodeResources)
	if c.NodeResources != nil {
		c.NodeResources.NodeNetworks = copySlice(n.NodeResources.NodeNetworks, func(nn *NodeNetworkResource) *NodeNetworkResource {
			nc := *nn
			nc.Addresses = append([]NodeNetworkAddress(nil), nn.Addresses...)
			return &nc
		})
	}
	c.ReservedResources = shallow(n.ReservedResources)
	c.Links = maps.Clone(n.Links)
	c.Meta = maps.Clone(n.Meta)
	c.DrainStrategy = shallow(n.DrainStrategy)
	c.Events = copySlice(n.Events, func(e *NodeEvent) *NodeEvent {
		ec := *e
		ec.Details = maps.Clone(e.Details)
		return &ec
	})
	c.Drivers = copyMap(n.Drivers, func(d *DriverInfo) *DriverInfo {
		dc := *d
		dc.Attributes = maps.Clone(d.Attributes)
		return &dc
	})
	c.HostVolumes = copyMap(n.HostVolumes, shallow[ClientHostVolumeConfig])
	c.Readiness = shallow(n.Readiness)
	return &c
}

// Copy returns a deep copy of the evaluation.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	c.RelatedEvals = copySlice(e.RelatedEvals, shallow[EvaluationStub])
	c.FailedTGAllocs = copyMap(e.FailedTGAllocs, (*AllocMetric).Copy)
	c.ClassEligibility = maps.Clone(e.ClassEligibility)
	c.QueuedAllocations = maps.Clone(e.QueuedAllocations)
	return &c
}

// Copy returns a deep copy of the metric.
func (m *AllocMetric) Copy() *AllocMetric {
	if m == nil {
		return nil
	}
	c := *m
	c.NodesAvailable = maps.Clone(m.NodesAvailable)
	c.ClassFiltered = maps.Clone(m.ClassFiltered)
	c.ConstraintFiltered = maps.Clone(m.ConstraintFiltered)
	c.ClassExhausted = maps.Clone(m.ClassExhausted)
	c.DimensionExhausted = maps.Clone(m.DimensionExhausted)
	c.QuotaExhausted = append([]string(nil), m.QuotaExhausted...)
	c.Scores = maps.Clone(m.Scores)
	c.ScoreMetaData = copySlice(m.ScoreMetaData, func(s *NodeScoreMeta) *NodeScoreMeta {
		sc := *s
		sc.Scores = maps.Clone(s.Scores)
		return &sc
	})
	return &c
}

// Copy returns a deep copy of the allocation, sharing its Job (jobs in the
// store are immutable).
func (a *Allocation) Copy() *Allocation {
	c := a.CopySkipJob()
	if c != nil {
		c.Job = a.Job
	}
	return c
}

// CopySkipJob returns a deep copy of the allocation with Job nil.
func (a *Allocation) CopySkipJob() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.Job = nil
	if a.AllocatedResources != nil {
		ar := *a.AllocatedResources
		ar.Tasks = copyMap(a.AllocatedResources.Tasks, func(t *AllocatedTaskResources) *AllocatedTaskResources {
			tc := *t
			tc.Cpu.ReservedCores = append([]uint16(nil), t.Cpu.ReservedCores...)
			tc.Networks = copySlice(t.Networks, (*NetworkResource).Copy)
			return &tc
		})
		ar.Shared.Networks = copySlice(a.AllocatedResources.Shared.Networks, (*NetworkResource).Copy)
		ar.Shared.Ports = append([]AllocatedPortMapping(nil), a.AllocatedResources.Shared.Ports...)
		c.AllocatedResources = &ar
	}
	c.Metrics = a.Metrics.Copy()
	c.DesiredTransition = DesiredTransition{
		Migrate: shallow(a.DesiredTransition.Migrate), Reschedule: shallow(a.DesiredTransition.Reschedule),
		ForceReschedule: shallow(a.DesiredTransition.ForceReschedule),
	}
	// c.TaskStates is shared: a TaskStates never changes.
	if a.RescheduleTracker != nil {
		c.RescheduleTracker = &RescheduleTracker{Events: copySlice(a.RescheduleTracker.Events, shallow[RescheduleEvent])}
	}
	c.PreemptedAllocations = append([]string(nil), a.PreemptedAllocations...)
	c.DeploymentStatus = a.DeploymentStatus.Copy()
	return &c
}

// Copy returns a deep copy of the task state.
func (ts *TaskState) Copy() *TaskState {
	if ts == nil {
		return nil
	}
	c := *ts
	c.Events = copySlice(ts.Events, func(e *TaskEvent) *TaskEvent {
		ec := *e
		ec.Details = maps.Clone(e.Details)
		return &ec
	})
	return &c
}

// Copy returns a deep copy of the service.
func (s *Service) Copy() *Service {
	if s == nil {
		return nil
	}
	c := *s
	c.Tags = slices.Clone(s.Tags)
	c.Checks = copySlice(s.Checks, (*ServiceCheck).Copy)
	c.CheckRestart = shallow(s.CheckRestart)
	c.Meta = maps.Clone(s.Meta)
	return &c
}

// Copy returns a deep copy of the check.
func (sc *ServiceCheck) Copy() *ServiceCheck {
	if sc == nil {
		return nil
	}
	c := *sc
	c.Args = slices.Clone(sc.Args)
	if sc.Header != nil {
		c.Header = make(map[string][]string, len(sc.Header))
		for k, v := range sc.Header {
			c.Header[k] = slices.Clone(v)
		}
	}
	c.CheckRestart = shallow(sc.CheckRestart)
	return &c
}

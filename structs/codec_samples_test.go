package structs

import (
	"fmt"
	"time"
)

// raftSample is one Raft message type with a request that sets most of
// its fields, nested values included.
type raftSample struct {
	t   MessageType
	msg any
	new func() any // a fresh value of msg's type to decode into
}

// raftSamples returns one sample per Raft message type, in type order.
//
// The golden files in testdata/codec-golden were encoded from these
// samples by the reflection path, before generated code existed: these
// functions must keep building exactly the same values (add new samples
// for new message types; never change the existing ones).
func raftSamples() []raftSample {
	pt, pf := true, false
	node := fixtureNode()
	job := fixtureJob()
	eval := fixtureEval(1)
	plan := fixturePlanResults(3)
	plan.Evals = []*Evaluation{fixtureEval(2)}
	stopped := *plan.AllocsUpdated[0]
	stopped.ID = fixtureID("d", 1)
	stopped.DesiredStatus = AllocDesiredStatusStop
	stopped.DesiredDescription = "alloc not needed due to job update"
	stopped.DesiredTransition = DesiredTransition{Migrate: &pt, Reschedule: &pf}
	stopped.AllocatedResources = nil
	stopped.Metrics = nil
	stopped.RescheduleTracker = &RescheduleTracker{Events: []*RescheduleEvent{{
		RescheduleTime: fixtureTime.UnixNano(), PrevAllocID: fixtureID("c", 9), PrevNodeID: fixtureID("a", 9), Delay: 30 * time.Second}}}
	stopped.PreemptedAllocations = []string{fixtureID("c", 8)}
	plan.AllocsStopped = []*Allocation{&stopped}
	plan.AllocsUpdated[1].AllocatedResources.Tasks["web-0"].Cpu.ReservedCores = []uint16{0, 3}
	plan.AllocsUpdated[2].Job = job // an allocation keeping its own job version
	updates := fixtureAllocUpdates(3)
	updates.Alloc[2].ClientStatus = AllocClientStatusFailed
	states := updates.Alloc[2].TaskStates.MustMap()
	states["web-0"].Failed = true
	states["web-0"].FinishedAt = fixtureTime.Add(time.Minute)
	states["web-0"].Events = append(states["web-0"].Events,
		&TaskEvent{Type: TaskTerminated, Time: fixtureTime.Add(time.Minute).UnixNano(), ExitCode: 2, Signal: 9,
			Details: map[string]string{"exit_code": "2"}, FailsTask: true, KillTimeout: 5 * time.Second})
	updates.Alloc[2].TaskStates = NewTaskStates(states)
	updates.Evals = []*Evaluation{fixtureEval(3)}
	event := &NodeEvent{Message: "Node heartbeat missed", Subsystem: "Cluster",
		Details: map[string]string{"reason": "ttl"}, Timestamp: fixtureTime, CreateIndex: 0}
	wr := WriteRequest{Region: DefaultRegion, Namespace: DefaultNamespace, Forwarded: true}
	return []raftSample{
		{NodeRegisterRequestType, &NodeRegisterRequest{Node: node, CreateEvals: []*Evaluation{eval}, WriteRequest: wr},
			func() any { return new(NodeRegisterRequest) }},
		{NodeDeregisterRequestType, &NodeDeregisterRequest{NodeIDs: []string{fixtureID("a", 1), fixtureID("a", 2)}, WriteRequest: wr},
			func() any { return new(NodeDeregisterRequest) }},
		{NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: node.ID, Status: NodeStatusDown, NodeEvent: event,
			UpdatedAt: fixtureTime.UnixNano(), CreateEvals: []*Evaluation{eval}, WriteRequest: wr},
			func() any { return new(NodeUpdateStatusRequest) }},
		{NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: node.ID,
			DrainStrategy: &DrainStrategy{Deadline: time.Hour, IgnoreSystemJobs: true,
				ForceDeadline: fixtureTime.Add(time.Hour), StartedAt: fixtureTime},
			MarkEligible: true, NodeEvent: event, UpdatedAt: fixtureTime.UnixNano(), CreateEvals: []*Evaluation{eval}, WriteRequest: wr},
			func() any { return new(NodeUpdateDrainRequest) }},
		{NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: node.ID, Eligibility: NodeSchedulingIneligible,
			NodeEvent: event, UpdatedAt: fixtureTime.UnixNano(), WriteRequest: wr},
			func() any { return new(NodeUpdateEligibilityRequest) }},
		{JobRegisterRequestType, &JobRegisterRequest{Job: job, EnforceIndex: true, JobModifyIndex: 250, Eval: eval, WriteRequest: wr},
			func() any { return new(JobRegisterRequest) }},
		{JobDeregisterRequestType, &JobDeregisterRequest{JobID: job.ID, Purge: true, Eval: eval,
			SubmitTime: fixtureTime.UnixNano(), WriteRequest: wr},
			func() any { return new(JobDeregisterRequest) }},
		{EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*Evaluation{eval, fixtureEval(2)}, EvalToken: fixtureID("f", 1), WriteRequest: wr},
			func() any { return new(EvalUpdateRequest) }},
		{EvalDeleteRequestType, &EvalDeleteRequest{Evals: []string{eval.ID}, Allocs: []string{fixtureID("c", 1)}, WriteRequest: wr},
			func() any { return new(EvalDeleteRequest) }},
		{AllocClientUpdateRequestType, updates, func() any { return new(AllocUpdateRequest) }},
		{ApplyPlanResultsRequestType, plan, func() any { return new(ApplyPlanResultsRequest) }},
		{AllocUpdateDesiredTransitionRequestType, &AllocUpdateDesiredTransitionRequest{
			Allocs: map[string]*DesiredTransition{fixtureID("c", 1): {Migrate: &pt}, fixtureID("c", 2): {ForceReschedule: &pt, Reschedule: &pf}},
			Evals:  []*Evaluation{eval}, UpdatedAt: fixtureTime.UnixNano(), WriteRequest: wr},
			func() any { return new(AllocUpdateDesiredTransitionRequest) }},
		{ApplyPlanResultsGroupedRequestType, groupedPlanResults(3), func() any { return new(ApplyPlanResultsRequest) }},
		{ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*ACLPolicy{fixtureACLPolicy()}, WriteRequest: wr},
			func() any { return new(ACLPolicyUpsertRequest) }},
		{ACLPolicyDeleteRequestType, &ACLPolicyDeleteRequest{Names: []string{"readonly"}, WriteRequest: wr},
			func() any { return new(ACLPolicyDeleteRequest) }},
		{ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*ACLToken{fixtureACLToken()}, WriteRequest: wr},
			func() any { return new(ACLTokenUpsertRequest) }},
		{ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{fixtureID("f", 1)}, WriteRequest: wr},
			func() any { return new(ACLTokenDeleteRequest) }},
		{ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: fixtureACLToken(), ResetIndex: 7, WriteRequest: wr},
			func() any { return new(ACLTokenBootstrapRequest) }},
		{ACLClusterSecretRequestType, &ACLClusterSecretRequest{Secret: &ACLClusterSecret{Secret: fixtureID("f", 9)}, WriteRequest: wr},
			func() any { return new(ACLClusterSecretRequest) }},
		{VarApplyStateRequestType, &VarApplyStateRequest{Op: VarOpCAS, Var: fixtureVariable(), WriteRequest: wr},
			func() any { return new(VarApplyStateRequest) }},
		{VariablesRekeyRequestType, &VariablesRekeyRequest{Vars: []*VariableEncrypted{fixtureVariable()}, WriteRequest: wr},
			func() any { return new(VariablesRekeyRequest) }},
		{RootKeyMetaUpsertRequestType, &RootKeyMetaUpsertRequest{RootKeyMeta: &RootKeyMeta{KeyID: fixtureID("e", 1),
			Algorithm: EncryptionAlgorithmAES256GCM, CreateTime: fixtureTime.UnixNano(), State: RootKeyStateActive}, WriteRequest: wr},
			func() any { return new(RootKeyMetaUpsertRequest) }},
		{ServiceRegistrationUpsertRequestType, &ServiceRegistrationUpsertRequest{Services: []*ServiceRegistration{{
			ID: "_nomad-task-" + fixtureID("a", 1) + "-web-web-http", ServiceName: "web", Namespace: "default",
			NodeID: fixtureID("n", 1), Datacenter: "dc1", JobID: "web", AllocID: fixtureID("a", 1),
			Tags: []string{"a", "b"}, Address: "10.0.0.1", Port: 20001}}, WriteRequest: wr},
			func() any { return new(ServiceRegistrationUpsertRequest) }},
		{ServiceRegistrationDeleteByIDRequestType, &ServiceRegistrationDeleteByIDRequest{ID: "_nomad-task-x", WriteRequest: wr},
			func() any { return new(ServiceRegistrationDeleteByIDRequest) }},
		{ServiceRegistrationDeleteByAllocIDsRequestType, &ServiceRegistrationDeleteByAllocIDsRequest{AllocIDs: []string{fixtureID("a", 1)}, WriteRequest: wr},
			func() any { return new(ServiceRegistrationDeleteByAllocIDsRequest) }},
		{JobStabilityRequestType, &JobStabilityRequest{JobID: "web", JobVersion: 3, Stable: true, WriteRequest: wr},
			func() any { return new(JobStabilityRequest) }},
		{ScalingEventRegisterRequestType, &ScalingEventRegisterRequest{JobID: "web", TaskGroup: "g",
			Event: &ScalingEvent{Time: 1700000000, Count: new(int64(3)), PreviousCount: 2, Message: "m", Meta: map[string]any{"a": "b"},
				EvalID: new("e"), CreateIndex: 4}, Job: job, Eval: eval, WriteRequest: wr},
			func() any { return new(ScalingEventRegisterRequest) }},
		{PeriodicLaunchRequestType, fixturePeriodicLaunch(), func() any { return new(PeriodicLaunchRequest) }},
		{SchedulerConfigRequestType, &SchedulerSetConfigRequest{Config: SchedulerConfiguration{SchedulerAlgorithm: SchedulerAlgorithmSpread,
			PreemptionConfig: PreemptionConfig{SystemSchedulerEnabled: true, ServiceSchedulerEnabled: true}, ModifyIndex: 7}, CAS: true,
			WriteRequest: WriteRequest{Region: "global"}}, func() any { return new(SchedulerSetConfigRequest) }},
		{NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*NodePool{{Name: "gpu", Description: "d",
			Meta: map[string]string{"a": "b"}}}, WriteRequest: WriteRequest{Region: "global"}}, func() any { return new(NodePoolUpsertRequest) }},
		{NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"gpu"}, WriteRequest: WriteRequest{Region: "global"}},
			func() any { return new(NodePoolDeleteRequest) }},
		{DeploymentStatusUpdateRequestType, &DeploymentStatusUpdateRequest{Eval: eval, Job: job,
			DeploymentUpdate: &DeploymentStatusUpdate{DeploymentID: fixtureID("f", 1), Status: DeploymentStatusFailed,
				StatusDescription: DeploymentStatusDescriptionFailedAllocations}, WriteRequest: wr},
			func() any { return new(DeploymentStatusUpdateRequest) }},
		{DeploymentPromoteRequestType, &ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: DeploymentPromoteRequest{
			DeploymentID: fixtureID("f", 1), Groups: []string{"web"}, WriteRequest: wr}, Eval: eval},
			func() any { return new(ApplyDeploymentPromoteRequest) }},
		{DeploymentAllocHealthRequestType, &ApplyDeploymentAllocHealthRequest{DeploymentAllocHealthRequest: DeploymentAllocHealthRequest{
			DeploymentID: fixtureID("f", 1), HealthyAllocationIDs: []string{fixtureID("c", 1)},
			UnhealthyAllocationIDs: []string{fixtureID("c", 2)}, WriteRequest: wr}, Timestamp: fixtureTime,
			DeploymentUpdate: &DeploymentStatusUpdate{DeploymentID: fixtureID("f", 1), Status: DeploymentStatusRunning,
				StatusDescription: DeploymentStatusDescriptionRunning}, Eval: eval},
			func() any { return new(ApplyDeploymentAllocHealthRequest) }},
		{PoolAutoscalerUpsertRequestType, &PoolAutoscalerUpsertRequest{Autoscaler: &PoolAutoscaler{Pool: "burst", Enabled: true, Provider: "local",
			InstanceTypes: []*InstanceType{{Name: "small", CPU: 1000, MemoryMB: 512, PricePerHour: 0.5, ProviderType: "s"}}, Min: 0, Max: 3,
			BootTimeout: time.Minute, IdleTimeout: time.Minute, CreateInterval: time.Minute, MaxCreatesPerInterval: 2, MaxBooting: 2,
			QuotaBackoff: time.Minute}, WriteRequest: WriteRequest{Region: "global"}}, func() any { return new(PoolAutoscalerUpsertRequest) }},
		{PoolInstanceUpdateRequestType, &PoolInstanceUpdateRequest{Instances: []*PoolInstance{{ID: "i-1", Pool: "burst", Type: "small",
			ProviderType: "s", PricePerHour: 0.5, State: InstanceBooting, Behavior: InstanceBehaviorRun, CreateTime: 7}}, Remove: []string{"i-0"},
			Events:       []*PoolEvent{{Pool: "burst", Time: 7, Type: PoolEventCreate, InstanceID: "i-1", Message: "m"}},
			WriteRequest: WriteRequest{Region: "global"}}, func() any { return new(PoolInstanceUpdateRequest) }},
		{PoolInstanceBehaviorRequestType, &PoolInstanceBehaviorRequest{InstanceID: "i-1", Behavior: InstanceBehaviorHold, Time: 9,
			WriteRequest: WriteRequest{Region: "global"}}, func() any { return new(PoolInstanceBehaviorRequest) }},
		{NodeQuarantineUpdateRequestType, &NodeQuarantineUpdateRequest{Quarantine: &NodeQuarantine{
			NodeID: fixtureID("a", 1), Quarantined: true, Since: fixtureTime, Reason: "3 node faults in 10m0s",
			ProbeAt: fixtureTime.Add(15 * time.Minute), Probes: 1,
			Faults: []*NodeFault{{NodeID: fixtureID("a", 1), Kind: NodeFaultSetup, AllocID: fixtureID("c", 1),
				TaskName: "web", Driver: "raw_exec", Time: fixtureTime}}},
			Eligibility: NodeSchedulingIneligible, UpdatedAt: 1700000000,
			NodeEvent:   &NodeEvent{Message: "Node quarantined", Subsystem: "Quarantine", Timestamp: fixtureTime, Details: map[string]string{"quarantine": "true"}},
			CreateEvals: []*Evaluation{eval}, WriteRequest: wr},
			func() any { return new(NodeQuarantineUpdateRequest) }},
	}
}

func fixtureVariable() *VariableEncrypted {
	return &VariableEncrypted{VariableMetadata: VariableMetadata{Namespace: "default", Path: "nomad/jobs/web",
		ModifyIndex: 4, CreateTime: fixtureTime.UnixNano(), ModifyTime: fixtureTime.UnixNano()},
		Data: []byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3}, KeyID: fixtureID("e", 1)}
}

// fixturePeriodicLaunch is a periodic job's child with its evaluation and
// launch record.
func fixturePeriodicLaunch() *PeriodicLaunchRequest {
	child := fixtureJob()
	child.Type = JobTypeBatch
	child.ParentID = child.ID
	child.ID = PeriodicChildID(child.ID, fixtureTime)
	return &PeriodicLaunchRequest{Job: child, Eval: fixtureEval(3),
		Launch: &PeriodicLaunch{Namespace: DefaultNamespace, ID: child.ParentID, Launch: fixtureTime, CreateIndex: 4, ModifyIndex: 5}}
}

func fixtureACLPolicy() *ACLPolicy {
	return &ACLPolicy{Name: "readonly", Description: "read jobs", Rules: `namespace "default" { policy = "read" }`}
}

func fixtureACLToken() *ACLToken {
	exp := fixtureTime.Add(time.Hour)
	return &ACLToken{AccessorID: fixtureID("f", 1), SecretHash: HashSecret("secret"), Name: "ci",
		Type: ACLClientToken, Policies: []string{"readonly"}, CreateTime: fixtureTime, ExpirationTime: exp}
}

// fixtureEval returns an evaluation with most fields set: a blocked
// evaluation with its placement failures.
func fixtureEval(i int) *Evaluation {
	return &Evaluation{
		ID: fixtureID("e", i), Namespace: DefaultNamespace, Priority: 50, Type: JobTypeService,
		TriggeredBy: EvalTriggerQueuedAllocs, JobID: "web-frontend", JobModifyIndex: 250,
		NodeID: fixtureID("a", 1), NodeModifyIndex: 12, Status: EvalStatusBlocked,
		StatusDescription: "created to place remaining allocations", Wait: 5 * time.Second,
		WaitUntil: fixtureTime.Add(5 * time.Second), NextEval: fixtureID("e", i+100),
		PreviousEval: fixtureID("e", i+200),
		RelatedEvals: []*EvaluationStub{{ID: fixtureID("e", i+300), Namespace: DefaultNamespace, Status: EvalStatusComplete,
			WaitUntil: fixtureTime, CreateIndex: 7}},
		FailedTGAllocs: map[string]*AllocMetric{"web": {NodesEvaluated: 10, NodesFiltered: 4, NodesInPool: 10,
			NodesAvailable: map[string]int{"dc1": 10}, ClassFiltered: map[string]int{"linux-small": 4},
			ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 4}, NodesExhausted: 6,
			ClassExhausted: map[string]int{"linux-large": 6}, DimensionExhausted: map[string]int{"memory": 6},
			QuotaExhausted: []string{"q"}, Scores: map[string]float64{"binpack": 0.5},
			ScoreMetaData:  []*NodeScoreMeta{{NodeID: fixtureID("a", 3), Scores: map[string]float64{"binpack": 0.25}, NormScore: 0.25}},
			AllocationTime: 1500 * time.Microsecond, CoalescedFailures: 9}},
		ClassEligibility: map[string]bool{"v1:123": true, "v1:456": false}, EscapedComputedClass: true,
		AnnotatePlan: true, QueuedAllocations: map[string]int{"web": 9},
		SnapshotIndex: 240, CreateIndex: 251, ModifyIndex: 252,
		CreateTime: fixtureTime.UnixNano(), ModifyTime: fixtureTime.Add(time.Second).UnixNano(),
	}
}

// goldenName is the file holding sample s's encoding.
func goldenName(s raftSample) string {
	return fmt.Sprintf("testdata/codec-golden/%02d-%s.msgpack", uint8(s.t), s.t)
}

package structs

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType is the first byte of every Raft log entry.
type MessageType uint8

// Raft message types. Numbers are part of the on-disk format: never reuse
// or renumber one; add new types at the end.
const (
	NodeRegisterRequestType MessageType = iota
	NodeDeregisterRequestType
	NodeUpdateStatusRequestType
	NodeUpdateDrainRequestType
	NodeUpdateEligibilityRequestType
	JobRegisterRequestType
	JobDeregisterRequestType
	EvalUpdateRequestType
	EvalDeleteRequestType
	AllocClientUpdateRequestType
	ApplyPlanResultsRequestType
	AllocUpdateDesiredTransitionRequestType
	// ApplyPlanResultsGroupedRequestType is an ApplyPlanResultsRequest
	// with AllocGroups. It has a type of its own, without the ignore
	// flag, so that a server too old to know groups stops at it instead
	// of applying the plan without its grouped placements.
	ApplyPlanResultsGroupedRequestType
	// ACL types (structs/acl.go). They are written without the ignore
	// flag: a server too old to know them must stop rather than drop a
	// token deletion or a policy change and allow what it should refuse.
	ACLPolicyUpsertRequestType
	ACLPolicyDeleteRequestType
	ACLTokenUpsertRequestType
	ACLTokenDeleteRequestType
	ACLTokenBootstrapRequestType
	ACLClusterSecretRequestType
	// Variables and the keyring (structs/variables.go), without the
	// ignore flag: a server that skipped them would serve other
	// variables than its peers, or lack the active key.
	VarApplyStateRequestType
	VariablesRekeyRequestType
	RootKeyMetaUpsertRequestType
	// Service registrations (structs/service_registration.go), written
	// without the ignore flag: a server that skipped them would serve a
	// catalogue the others do not have.
	ServiceRegistrationUpsertRequestType
	ServiceRegistrationDeleteByIDRequestType
	ServiceRegistrationDeleteByAllocIDsRequestType
	// JobStabilityRequestType sets a job version's Stable flag. Written
	// without the ignore flag: auto-revert picks its target by it, so a
	// server that skipped it would choose differently.
	JobStabilityRequestType
	// ScalingEventRegisterRequestType is a scaling request: the scaled
	// job with its evaluation, and the scaling event. Not ignorable: it
	// may carry a new job version.
	ScalingEventRegisterRequestType
	// PeriodicLaunchRequestType registers a periodic job's child with the
	// parent's last launch (structs/periodic.go). Without the ignore flag:
	// an older server must stop rather than lose a launch record.
	PeriodicLaunchRequestType
	// SchedulerConfigRequestType sets the scheduler configuration
	// (structs/operator.go). Not ignorable: a server that skipped it
	// would schedule (and preempt) differently from its peers.
	SchedulerConfigRequestType
	// NodePoolUpsertRequestType and NodePoolDeleteRequestType write node
	// pools (structs/node_pool.go). Not ignorable: a server that skipped
	// them would refuse or place jobs differently.
	NodePoolUpsertRequestType
	NodePoolDeleteRequestType
	// Deployments (structs/deployment.go), without the ignore flag: a
	// server that skipped them would pace, promote or revert differently.
	// DeploymentStatusUpdateRequestType changes a deployment's status
	// (with a revert and an evaluation); DeploymentPromoteRequestType
	// promotes canaries; DeploymentAllocHealthRequestType sets
	// allocations' health through the deployment.
	DeploymentStatusUpdateRequestType
	DeploymentPromoteRequestType
	DeploymentAllocHealthRequestType
	// Autoscaling node pools (structs/autoscale.go), without the ignore
	// flag: a server that skipped them would, once leader, create or
	// destroy instances its peers know nothing of.
	// PoolAutoscalerUpsertRequestType sets or deletes a pool's
	// configuration; PoolInstanceUpdateRequestType is the leader
	// autoscaler's record of instances and events;
	// PoolInstanceBehaviorRequestType is an operator's hold, drain or run.
	PoolAutoscalerUpsertRequestType
	PoolInstanceUpdateRequestType
	PoolInstanceBehaviorRequestType
	// NodeQuarantineUpdateRequestType writes a node's quarantine row
	// (structs/quarantine.go): its recent node faults and, on a
	// quarantine or its lift, the node's eligibility. Not ignorable: a
	// server that skipped it would place work on a quarantined node.
	NodeQuarantineUpdateRequestType // 37
)

// IgnoreUnknownTypeFlag, set on a message type, tells an older server that
// does not know the type to skip the entry instead of stopping. Types that
// may safely be ignored during a rolling upgrade are written with it.
const IgnoreUnknownTypeFlag MessageType = 128

func (t MessageType) String() string {
	names := [...]string{"NodeRegister", "NodeDeregister", "NodeUpdateStatus",
		"NodeUpdateDrain", "NodeUpdateEligibility", "JobRegister", "JobDeregister",
		"EvalUpdate", "EvalDelete", "AllocClientUpdate", "ApplyPlanResults",
		"AllocUpdateDesiredTransition", "ApplyPlanResultsGrouped",
		"ACLPolicyUpsert", "ACLPolicyDelete", "ACLTokenUpsert", "ACLTokenDelete",
		"ACLTokenBootstrap", "ACLClusterSecret", "VarApplyState", "VariablesRekey",
		"RootKeyMetaUpsert", "ServiceRegistrationUpsert",
		"ServiceRegistrationDeleteByID", "ServiceRegistrationDeleteByAllocIDs",
		"JobStability", "ScalingEventRegister", "PeriodicLaunch", "SchedulerConfig",
		"NodePoolUpsert", "NodePoolDelete",
		"DeploymentStatusUpdate", "DeploymentPromote", "DeploymentAllocHealth",
		"PoolAutoscalerUpsert", "PoolInstanceUpdate", "PoolInstanceBehavior",
		"NodeQuarantineUpdate"}
	base := t &^ IgnoreUnknownTypeFlag
	if int(base) < len(names) && names[base] != "" {
		return names[base]
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// MsgpackHandle is the one msgpack configuration used for Raft entries,
// snapshots and RPC.
var MsgpackHandle = newMsgpackHandle(false)

// newMsgpackHandle returns MsgpackHandle's configuration, with map keys
// sorted when canonical (see NewTaskStates). Raw is set so that values
// kept encoded (TaskStates) are written out as they are.
func newMsgpackHandle(canonical bool) *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.Raw = true
	h.Canonical = canonical
	return h
}

// Encode writes t followed by msg in msgpack. The result is exactly as
// long as the entry (Raft keeps it in its log cache).
func Encode(t MessageType, msg any) ([]byte, error) {
	s := encoders.Get().(*encodeScratch)
	defer s.release()
	s.enc.ResetBytes(&s.buf)
	if err := s.enc.Encode(msg); err != nil {
		return nil, err
	}
	out := make([]byte, 1+len(s.buf))
	out[0] = uint8(t)
	copy(out[1:], s.buf)
	return out, nil
}

// Decode reads a msgpack body into out, which should be a fresh value:
// decoding merges into what out already holds (maps keep their keys,
// pointers are decoded into).
func Decode(buf []byte, out any) error {
	d := decoders.Get().(*codec.Decoder)
	if buf == nil {
		buf = []byte{}
	}
	d.ResetBytes(buf)
	err := d.Decode(out)
	d.ResetBytes(noBytes) // do not keep buf alive in the pool
	decoders.Put(d)
	return err
}

// encodeScratch is a pooled encoder with the buffer it writes into.
type encodeScratch struct {
	buf  []byte
	enc  *codec.Encoder
	pool *sync.Pool // the pool it goes back to
}

// newEncodeScratch returns a scratch encoding with h, for pool.
func newEncodeScratch(h *codec.MsgpackHandle, size int, pool *sync.Pool) *encodeScratch {
	s := &encodeScratch{buf: make([]byte, 0, size), pool: pool}
	s.enc = codec.NewEncoderBytes(&s.buf, h)
	return s
}

// maxPooledEncodeBuf bounds the buffer a pooled encoder keeps.
const maxPooledEncodeBuf = 1 << 20

func (s *encodeScratch) release() {
	if cap(s.buf) <= maxPooledEncodeBuf {
		s.buf = s.buf[:0]
		s.pool.Put(s)
	}
}

var (
	noBytes  = []byte{}
	encoders sync.Pool
	decoders = sync.Pool{New: func() any { return codec.NewDecoderBytes(noBytes, MsgpackHandle) }}
)

func init() {
	encoders.New = func() any { return newEncodeScratch(MsgpackHandle, 4096, &encoders) }
}

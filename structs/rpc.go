package structs

import (
	"context"
	"time"
)

// QueryOptions is embedded in every read request.
type QueryOptions struct {
	Region    string
	Namespace string
	// MinQueryIndex makes the read blocking: it returns once the data's
	// index passes this value, or after MaxQueryTime.
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	// AllowStale lets any server answer from its local state.
	AllowStale bool
	Prefix     string
	PerPage    int32
	NextToken  string
	// Forwarded is set on a request a follower passed to the leader.
	Forwarded bool
	// AuthToken is the caller's ACL secret (X-Nomad-Token). A server
	// forwarding the request passes it on; the server that serves the
	// request resolves it itself.
	AuthToken string `codec:",omitempty"`

	// ctx, when set, ends a blocking read served in this process early
	// (an HTTP client that went away). It never crosses the wire.
	ctx context.Context
}

// WithContext makes ctx end the blocking read q describes when it is
// served in this process (see Server.RPC); a request forwarded to another
// server runs to its own timeout.
func (q *QueryOptions) WithContext(ctx context.Context) { q.ctx = ctx }

// Context returns the context set by WithContext, or nil.
func (q *QueryOptions) Context() context.Context { return q.ctx }

// RequestNamespace returns the namespace, defaulting to "default".
func (q *QueryOptions) RequestNamespace() string {
	if q.Namespace == "" {
		return DefaultNamespace
	}
	return q.Namespace
}

// IsRead marks read requests for RPC forwarding.
func (q *QueryOptions) IsRead() bool { return true }

// AllowStaleRead reports whether a follower may answer.
func (q *QueryOptions) AllowStaleRead() bool { return q.AllowStale }

// SetForwarded marks the request as forwarded once.
func (q *QueryOptions) SetForwarded() { q.Forwarded = true }

// IsForwarded reports whether the request was forwarded.
func (q *QueryOptions) IsForwarded() bool { return q.Forwarded }

// RequestToken returns the caller's ACL secret.
func (q *QueryOptions) RequestToken() string { return q.AuthToken }

// WriteRequest is embedded in every write request.
type WriteRequest struct {
	Region    string
	Namespace string
	Forwarded bool
	// AuthToken is the caller's ACL secret (see QueryOptions.AuthToken).
	AuthToken string `codec:",omitempty"`
}

// RequestNamespace returns the namespace, defaulting to "default".
func (w *WriteRequest) RequestNamespace() string {
	if w.Namespace == "" {
		return DefaultNamespace
	}
	return w.Namespace
}

// IsRead marks write requests for RPC forwarding.
func (w *WriteRequest) IsRead() bool { return false }

// AllowStaleRead is false for writes.
func (w *WriteRequest) AllowStaleRead() bool { return false }

// SetForwarded marks the request as forwarded once.
func (w *WriteRequest) SetForwarded() { w.Forwarded = true }

// IsForwarded reports whether the request was forwarded.
func (w *WriteRequest) IsForwarded() bool { return w.Forwarded }

// RequestToken returns the caller's ACL secret.
func (w *WriteRequest) RequestToken() string { return w.AuthToken }

// RPCInfo is implemented by every request so the server can route it.
type RPCInfo interface {
	IsRead() bool
	AllowStaleRead() bool
	SetForwarded()
	IsForwarded() bool
	// RequestToken is the caller's ACL secret ("" for none).
	RequestToken() string
	// RequestNamespace is the namespace the request acts in.
	RequestNamespace() string
}

// QueryMeta is embedded in every read response.
type QueryMeta struct {
	// Index is the Raft index of the data returned; the HTTP layer sends it
	// as X-Nomad-Index.
	Index       uint64
	LastContact time.Duration
	KnownLeader bool
	NextToken   string
}

// WriteMeta is embedded in every write response.
type WriteMeta struct {
	Index uint64
}

// GenericRequest is a read with no arguments.
type GenericRequest struct {
	QueryOptions
}

// GenericResponse is a write with no result but its index.
type GenericResponse struct {
	WriteMeta
}

// JobRegisterRequest registers or updates a job. The leader fills Eval and
// SubmitTime before the Raft apply, so the job and its evaluation are
// written in one entry.
type JobRegisterRequest struct {
	Job *Job
	// EnforceIndex makes the write conditional on JobModifyIndex
	// (check-and-set; 0 means the job must not exist).
	EnforceIndex   bool
	JobModifyIndex uint64
	Eval           *Evaluation
	WriteRequest
}

// JobRegisterResponse answers JobRegisterRequest.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	QueryMeta
}

// JobDeregisterRequest stops a job, or removes it when Purge is set.
type JobDeregisterRequest struct {
	JobID string
	Purge bool
	Eval  *Evaluation
	// SubmitTime is set by the leader.
	SubmitTime int64
	WriteRequest
}

// JobDeregisterResponse answers JobDeregisterRequest.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	QueryMeta
}

// JobSpecificRequest names one job.
type JobSpecificRequest struct {
	JobID string
	All   bool
	QueryOptions
}

// SingleJobResponse returns one job (nil when not found).
type SingleJobResponse struct {
	Job *Job
	QueryMeta
}

// JobListRequest lists jobs.
type JobListRequest struct {
	QueryOptions
}

// JobListResponse returns job stubs.
type JobListResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// NodeRegisterRequest registers or re-registers a node.
type NodeRegisterRequest struct {
	Node *Node
	// CreateEvals are filled by the leader: evaluations triggered by the
	// registration, written in the same Raft entry.
	CreateEvals []*Evaluation
	WriteRequest
}

// NodeUpdateResponse answers node writes. HeartbeatTTL tells the client how
// often it must heartbeat.
type NodeUpdateResponse struct {
	HeartbeatTTL    time.Duration
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	LeaderRPCAddr   string
	NumNodes        int32
	Servers         []*NodeServerInfo
	QueryMeta
}

// NodeServerInfo tells clients which servers they may use.
type NodeServerInfo struct {
	RPCAdvertiseAddr string
	Datacenter       string
}

// NodeDeregisterRequest removes nodes.
type NodeDeregisterRequest struct {
	NodeIDs []string
	WriteRequest
}

// NodeUpdateStatusRequest is a heartbeat or status change.
type NodeUpdateStatusRequest struct {
	NodeID string
	// SecretID is the node's secret (Node.SecretID); the call is refused
	// without it. The servers clear it before writing the request to Raft.
	SecretID  string `codec:",omitempty"`
	Status    string
	NodeEvent *NodeEvent
	UpdatedAt int64
	// CreateEvals are filled by the leader.
	CreateEvals []*Evaluation
	WriteRequest
}

// NodeUpdateEligibilityRequest toggles scheduling eligibility.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	NodeEvent   *NodeEvent
	UpdatedAt   int64
	CreateEvals []*Evaluation
	WriteRequest
}

// NodeUpdateDrainRequest starts or stops a drain.
type NodeUpdateDrainRequest struct {
	NodeID        string
	DrainStrategy *DrainStrategy
	MarkEligible  bool
	NodeEvent     *NodeEvent
	UpdatedAt     int64
	CreateEvals   []*Evaluation
	WriteRequest
}

// NodeSpecificRequest names one node.
type NodeSpecificRequest struct {
	NodeID   string
	SecretID string
	// InlineAllocs, for Node.GetClientAllocs only: also answer, in the
	// reply's Changed, with up to this many of the allocations modified
	// after MinQueryIndex (see MaxInlineAllocs), so the client need not
	// fetch them with Alloc.GetAllocs. 0: none (Nomad's behaviour).
	InlineAllocs int `codec:",omitempty"`
	QueryOptions
}

// MaxInlineAllocs caps NodeSpecificRequest.InlineAllocs: a larger change
// is fetched in parts (Alloc.GetAllocs) rather than sent as one message.
const MaxInlineAllocs = 256

// SingleNodeResponse returns one node (nil when not found).
type SingleNodeResponse struct {
	Node *Node
	QueryMeta
}

// NodeListRequest lists nodes.
type NodeListRequest struct {
	QueryOptions
}

// NodeListResponse returns node stubs.
type NodeListResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}

// NodeAllocsResponse returns a node's allocations (client watch).
type NodeAllocsResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// EvalSpecificRequest names one evaluation.
type EvalSpecificRequest struct {
	EvalID string
	QueryOptions
}

// SingleEvalResponse returns one evaluation (nil when not found).
type SingleEvalResponse struct {
	Eval *Evaluation
	QueryMeta
}

// EvalListRequest lists evaluations.
type EvalListRequest struct {
	FilterJobID      string
	FilterEvalStatus string
	QueryOptions
}

// EvalListResponse returns evaluations.
type EvalListResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// EvalUpdateRequest writes evaluations (worker updates, creates, reblocks).
type EvalUpdateRequest struct {
	Evals     []*Evaluation
	EvalToken string
	WriteRequest
}

// EvalDeleteRequest removes evaluations, allocations and deployments
// (garbage collection).
type EvalDeleteRequest struct {
	Evals       []string
	Allocs      []string
	Deployments []string
	WriteRequest
}

// AllocSpecificRequest names one allocation.
type AllocSpecificRequest struct {
	AllocID string
	QueryOptions
}

// SingleAllocResponse returns one allocation (nil when not found).
type SingleAllocResponse struct {
	Alloc *Allocation
	QueryMeta
}

// AllocListRequest lists allocations.
type AllocListRequest struct {
	QueryOptions
}

// AllocListResponse returns allocation stubs.
type AllocListResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// AllocUpdateRequest carries client status updates, batched.
type AllocUpdateRequest struct {
	Alloc []*Allocation
	// NodeSecrets maps the ID of each node whose allocations Alloc updates
	// to that node's secret (Node.SecretID): one entry for a client agent,
	// one per simulated node for agent/sim's batches. An update of an
	// allocation whose node has no entry here, or a wrong one, refuses the
	// whole request. Never written to Raft.
	NodeSecrets map[string]string
	// Evals are created by the leader for allocations that failed and may
	// be rescheduled.
	Evals []*Evaluation
	// NodeFaults are failures the client attributes to its node (each
	// also a task event with its NodeFault kind), counted by the leader
	// toward the node's quarantine. Each must name a node of NodeSecrets.
	// Never written to Raft with the updates.
	NodeFaults []*NodeFault `json:",omitempty"`
	WriteRequest
}

// ApplyPlanResultsRequest is the Raft entry for one committed plan.
type ApplyPlanResultsRequest struct {
	// Job is stored once; allocations below point at it after apply.
	Job *Job
	// AllocsStopped are stops and evictions (only the changed fields).
	AllocsStopped []*Allocation
	// AllocsUpdated are new placements and in-place updates.
	AllocsUpdated []*Allocation
	// AllocGroups are more of them, in compact form (see AllocGroup):
	// the leader's Compact fills them, the FSM's Expand moves them into
	// AllocsUpdated.
	AllocGroups []*AllocGroup
	// EvalID is the evaluation the plan belongs to.
	EvalID string
	// Evals are evaluation updates written with the plan.
	Evals []*Evaluation
	// UpdatedAt is the leader's time of commit (unix nanoseconds).
	UpdatedAt int64
	// Deployment is the deployment the plan creates or updates (nil:
	// none); DeploymentUpdates are status changes of other deployments
	// (an older one the plan's cancels).
	Deployment        *Deployment `codec:",omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate
	WriteRequest
}

// RaftServer is one member of the Raft configuration.
type RaftServer struct {
	ID           string
	Node         string
	Address      string
	Leader       bool
	Voter        bool
	RaftProtocol string
}

// RaftConfigurationResponse is the Raft configuration.
type RaftConfigurationResponse struct {
	Servers []*RaftServer
	Index   uint64
}

// RaftPeerRequest names a Raft peer to remove, by ID or address.
type RaftPeerRequest struct {
	ID      string
	Address string
	WriteRequest
}

// RaftIDAddress names a Raft server by ID and address.
type RaftIDAddress struct {
	Address string
	ID      string
}

// LeadershipTransferRequest asks the leader to hand leadership to the
// server named by ID or, failing that, by address; with neither, Raft
// picks the most up-to-date follower.
type LeadershipTransferRequest struct {
	ID      string
	Address string
	WriteRequest
}

// LeadershipTransferResponse says which server led before the transfer
// and which one was asked to lead (the shape of Nomad's reply to
// PUT /v1/operator/raft/transfer-leadership). Noop: the named server
// already led and nothing was done.
type LeadershipTransferResponse struct {
	From RaftIDAddress
	To   RaftIDAddress
	Noop bool
	WriteMeta
}

// ServerMember describes a server known to this one.
type ServerMember struct {
	ID         string
	Name       string
	RPCAddr    string
	Datacenter string
	Region     string
	Status     string
	Leader     bool
	Bootstrap  int
	// HasState reports whether the server already has Raft data, so peers
	// never bootstrap over an existing cluster.
	HasState bool
	Version  string
}

// ServerAnnounceRequest is how a server tells others it exists.
type ServerAnnounceRequest struct {
	Member ServerMember
}

// ServerMembersResponse lists the servers this server knows.
type ServerMembersResponse struct {
	Members []*ServerMember
}

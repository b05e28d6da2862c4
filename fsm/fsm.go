package fsm

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Hooks are the leader-side reactions to applied entries. The FSM calls
// them synchronously after a successful write, on every server; an
// implementation decides whether to act (usually only on the leader). Every
// method must be cheap and must not block. Arguments are owned by the state
// store: never modify them.
type Hooks interface {
	// EvalsUpserted is called with the evaluations an entry wrote.
	EvalsUpserted(evals []*structs.Evaluation)
	// NodeChanged is called with the stored node after it was registered
	// or its status, eligibility or drain changed.
	NodeChanged(node *structs.Node, index uint64)
	// AllocsTerminal is called once per node on which an entry made at
	// least one allocation terminal (client finished it, or a plan stopped
	// it): capacity was freed there.
	AllocsTerminal(nodeID string, index uint64)
}

type noopHooks struct{}

func (noopHooks) EvalsUpserted([]*structs.Evaluation) {}
func (noopHooks) NodeChanged(*structs.Node, uint64)   {}
func (noopHooks) AllocsTerminal(string, uint64)       {}

// Config configures an FSM.
type Config struct {
	// Logger is the parent logger; the FSM logs as "fsm". nil discards.
	Logger hclog.Logger
	// Hooks receives reactions to applied entries; nil means none.
	Hooks Hooks
	// RestoreGCPercent is the garbage collector's target percentage (as
	// GOGC) while Restore reads a snapshot; see restoreGC. 0 means
	// DefaultRestoreGCPercent; negative leaves the collector alone.
	RestoreGCPercent int
	// JobTrackedVersions is how many versions of each job the store keeps
	// (state.WithJobTrackedVersions); 0 means structs.JobTrackedVersions.
	JobTrackedVersions int
}

// DefaultRestoreGCPercent is the default Config.RestoreGCPercent.
const DefaultRestoreGCPercent = 400

// FSM implements raft.FSM and raft.BatchingFSM over a state.StateStore.
type FSM struct {
	logger           hclog.Logger
	hooks            Hooks
	restoreGCPercent int
	storeOpts        []state.Option // every store the FSM makes (New, Restore)

	// state is the live store. Apply and Restore replace or use it; readers
	// load it at any time. Raft never runs Apply and Restore concurrently.
	state atomic.Pointer[state.StateStore]

	// applyMu serialises Apply and ApplyBatch (Raft calls them from one
	// goroutine; the lock keeps direct callers safe and costs nothing
	// uncontended).
	applyMu sync.Mutex
	dec     *codec.Decoder // guarded by applyMu; reused for every entry
	pending []hookCall     // guarded by applyMu; hooks of the open batch
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns an FSM with an empty state store.
func New(cfg Config) (*FSM, error) {
	opts := []state.Option{state.WithJobTrackedVersions(cfg.JobTrackedVersions)}
	store, err := state.NewStateStore(opts...)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	f := &FSM{logger: logger.Named("fsm"), hooks: cfg.Hooks, restoreGCPercent: cfg.RestoreGCPercent,
		storeOpts: opts,
		dec:       codec.NewDecoderBytes(nil, structs.MsgpackHandle)}
	if f.restoreGCPercent == 0 {
		f.restoreGCPercent = DefaultRestoreGCPercent
	}
	if f.hooks == nil {
		f.hooks = noopHooks{}
	}
	f.state.Store(store)
	return f, nil
}

// State returns the current store. It changes after a Restore; the old
// store's AbandonCh is closed then, and BlockingQuery follows it to the new
// one.
func (f *FSM) State() *state.StateStore { return f.state.Load() }

// Metric names: drover.fsm.<name>, one per message type, plus snapshots.
const (
	metricNodeRegister          = "node_register"
	metricNodeDeregister        = "node_deregister"
	metricNodeUpdateStatus      = "node_update_status"
	metricNodeUpdateDrain       = "node_update_drain"
	metricNodeUpdateEligibility = "node_update_eligibility"
	metricJobRegister           = "job_register"
	metricJobDeregister         = "job_deregister"
	metricEvalUpdate            = "eval_update"
	metricEvalDelete            = "eval_delete"
	metricAllocClientUpdate     = "alloc_client_update"
	metricApplyPlanResults      = "apply_plan_results"
	metricAllocTransition       = "alloc_desired_transition"
	metricPeriodicLaunch        = "periodic_launch"
	metricSchedulerConfig       = "scheduler_config"
	metricNodePoolUpsert        = "node_pool_upsert"
	metricNodePoolDelete        = "node_pool_delete"
	metricNodeQuarantine        = "node_quarantine_update"
	metricPoolAutoscalerUpsert  = "pool_autoscaler_upsert"
	metricPoolInstanceUpdate    = "pool_instance_update"
	metricPoolInstanceBehavior  = "pool_instance_behavior"
	metricPersist               = "persist"
	metricRestore               = "restore"
)

func metricKey(name string) []string { return []string{"drover", "fsm", name} }

// Apply applies one committed entry. It returns nil, or the error (typed,
// see structs.Error) when the store refused the write; nothing is written
// then. An entry that is empty or whose body does not decode is refused
// with an invalid-input error (see decodeLocked). An entry of unknown type
// is skipped when it carries structs.IgnoreUnknownTypeFlag and otherwise
// panics: a server too old for the log must stop rather than diverge from
// the newer servers, which apply it. That is the one panic.
func (f *FSM) Apply(log *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{log})[0]
}

// ApplyBatch applies committed entries in order, all in one state
// transaction (one commit and one wake-up of blocking queries for the
// batch), and returns one result per entry, as Apply would. Hooks run per
// entry, in order, after the commit. Entries other than commands (Raft
// configuration changes) are skipped with a nil result.
//
// An entry the store refuses writes nothing and does not affect the
// others: refusals found before writing (a check-and-set conflict) just
// become that entry's result; a write that fails part-way aborts the
// transaction, which is then redone without the refused entry (see
// applyRunLocked).
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	results := make([]any, len(logs))
	for start := 0; start < len(logs); {
		start = f.applyRunLocked(logs, start, results)
	}
	return results
}

// applyRunLocked applies logs[start:] in one transaction. If an entry's
// write fails, the transaction (which may hold part of that write) is
// aborted, the entries before it are applied again, freshly decoded, in a
// new transaction (they succeed as before: same state, same entries), and
// the failed entry gets its error without being written. It returns the
// position of the first entry it did not handle.
func (f *FSM) applyRunLocked(logs []*raft.Log, start int, results []any) int {
	b := f.State().Batch()
	defer b.Abort()
	f.pending = f.pending[:0]
	for i := start; i < len(logs); i++ {
		resp, err := f.applyEntryLocked(b, logs[i])
		if err != nil {
			b.Abort()
			if i > start {
				f.applyRunLocked(logs[:i], start, results)
			}
			results[i] = err
			return i + 1
		}
		results[i] = resp
	}
	if err := b.Commit(); err != nil {
		panic(fmt.Sprintf("fsm: committing entries %d-%d: %v", logs[start].Index, logs[len(logs)-1].Index, err))
	}
	f.runHooksLocked()
	return len(logs)
}

// applyEntryLocked applies one entry to b. resp is the entry's result
// (nil, or the error of a refusal that wrote nothing); err reports a write
// that failed and may have left part of itself in b.
func (f *FSM) applyEntryLocked(b *state.Batch, log *raft.Log) (resp any, err error) {
	if log.Type != raft.LogCommand {
		return nil, nil
	}
	if len(log.Data) == 0 {
		// Refused like an undecodable entry (see decodeLocked).
		f.logger.Error("refusing an empty entry", "index", log.Index)
		return structs.NewError(structs.ErrCodeInvalid, "fsm: empty log entry at index %d", log.Index), nil
	}
	buf := log.Data
	msgType := structs.MessageType(buf[0])
	ignoreUnknown := msgType&structs.IgnoreUnknownTypeFlag != 0
	msgType &^= structs.IgnoreUnknownTypeFlag

	switch msgType {
	case structs.NodeRegisterRequestType:
		return f.applyNodeRegister(b, buf[1:], log.Index)
	case structs.NodeDeregisterRequestType:
		return f.applyNodeDeregister(b, buf[1:], log.Index)
	case structs.NodeUpdateStatusRequestType:
		return f.applyNodeUpdateStatus(b, buf[1:], log.Index)
	case structs.NodeUpdateDrainRequestType:
		return f.applyNodeUpdateDrain(b, buf[1:], log.Index)
	case structs.NodeUpdateEligibilityRequestType:
		return f.applyNodeUpdateEligibility(b, buf[1:], log.Index)
	case structs.JobRegisterRequestType:
		return f.applyJobRegister(b, buf[1:], log.Index)
	case structs.JobDeregisterRequestType:
		return f.applyJobDeregister(b, buf[1:], log.Index)
	case structs.EvalUpdateRequestType:
		return f.applyEvalUpdate(b, buf[1:], log.Index)
	case structs.EvalDeleteRequestType:
		return f.applyEvalDelete(b, buf[1:], log.Index)
	case structs.AllocClientUpdateRequestType:
		return f.applyAllocClientUpdate(b, buf[1:], log.Index)
	case structs.ApplyPlanResultsRequestType, structs.ApplyPlanResultsGroupedRequestType:
		return f.applyPlanResults(b, buf[1:], log.Index)
	case structs.AllocUpdateDesiredTransitionRequestType:
		return f.applyAllocDesiredTransition(b, buf[1:], log.Index)
	case structs.ACLPolicyUpsertRequestType:
		return f.applyACLPolicyUpsert(b, buf[1:], log.Index)
	case structs.ACLPolicyDeleteRequestType:
		return f.applyACLPolicyDelete(b, buf[1:], log.Index)
	case structs.ACLTokenUpsertRequestType:
		return f.applyACLTokenUpsert(b, buf[1:], log.Index)
	case structs.ACLTokenDeleteRequestType:
		return f.applyACLTokenDelete(b, buf[1:], log.Index)
	case structs.ACLTokenBootstrapRequestType:
		return f.applyACLTokenBootstrap(b, buf[1:], log.Index)
	case structs.ACLClusterSecretRequestType:
		return f.applyACLClusterSecret(b, buf[1:], log.Index)
	case structs.VarApplyStateRequestType:
		return f.applyVarApplyState(b, buf[1:], log.Index)
	case structs.VariablesRekeyRequestType:
		return f.applyVariablesRekey(b, buf[1:], log.Index)
	case structs.RootKeyMetaUpsertRequestType:
		return f.applyRootKeyMetaUpsert(b, buf[1:], log.Index)
	case structs.ServiceRegistrationUpsertRequestType:
		return f.applyServiceRegistrationUpsert(b, buf[1:], log.Index)
	case structs.ServiceRegistrationDeleteByIDRequestType:
		return f.applyServiceRegistrationDeleteByID(b, buf[1:], log.Index)
	case structs.ServiceRegistrationDeleteByAllocIDsRequestType:
		return f.applyServiceRegistrationDeleteByAllocIDs(b, buf[1:], log.Index)
	case structs.JobStabilityRequestType:
		return f.applyJobStability(b, buf[1:], log.Index)
	case structs.ScalingEventRegisterRequestType:
		return f.applyScalingEvent(b, buf[1:], log.Index)
	case structs.PeriodicLaunchRequestType:
		return f.applyPeriodicLaunch(b, buf[1:], log.Index)
	case structs.SchedulerConfigRequestType:
		return f.applySchedulerConfig(b, buf[1:], log.Index)
	case structs.NodePoolUpsertRequestType:
		return f.applyNodePoolUpsert(b, buf[1:], log.Index)
	case structs.NodePoolDeleteRequestType:
		return f.applyNodePoolDelete(b, buf[1:], log.Index)
	case structs.DeploymentStatusUpdateRequestType:
		return f.applyDeploymentStatusUpdate(b, buf[1:], log.Index)
	case structs.DeploymentPromoteRequestType:
		return f.applyDeploymentPromotion(b, buf[1:], log.Index)
	case structs.DeploymentAllocHealthRequestType:
		return f.applyDeploymentAllocHealth(b, buf[1:], log.Index)
	case structs.NodeQuarantineUpdateRequestType:
		return f.applyNodeQuarantineUpdate(b, buf[1:], log.Index)
	case structs.PoolAutoscalerUpsertRequestType:
		return f.applyPoolAutoscalerUpsert(b, buf[1:], log.Index)
	case structs.PoolInstanceUpdateRequestType:
		return f.applyPoolInstanceUpdate(b, buf[1:], log.Index)
	case structs.PoolInstanceBehaviorRequestType:
		return f.applyPoolInstanceBehavior(b, buf[1:], log.Index)
	}
	if ignoreUnknown {
		f.logger.Warn("ignoring unknown message type", "msg_type", uint8(msgType), "index", log.Index)
		return nil, nil
	}
	panic(fmt.Sprintf("fsm: unknown message type %d at index %d and no ignore flag: this server is too old for the log", uint8(msgType), log.Index))
}

// decodeLocked reads an entry body with the FSM's reused decoder. A body
// that does not decode, or holds a null element in a list the store walks
// (see checkNulls), is refused with an invalid-input error and writes
// nothing: a corrupt entry, or a bug in the server that wrote it. It does
// not panic: every server decodes the same bytes the same way, so all of
// them refuse the entry alike and stay in step, whereas a panic would stop
// every server of the cluster, and again each time it replays the log.
func (f *FSM) decodeLocked(buf []byte, out any, t structs.MessageType, index uint64) error {
	f.dec.ResetBytes(buf)
	if err := f.dec.Decode(out); err != nil {
		f.logger.Error("refusing an entry that does not decode", "msg_type", t.String(), "index", index, "error", err)
		return structs.NewError(structs.ErrCodeInvalid, "fsm: decoding %s entry at index %d: %v", t, index, err)
	}
	if err := checkNulls(out); err != nil {
		f.logger.Error("refusing an entry with a null element", "msg_type", t.String(), "index", index, "error", err)
		return err
	}
	return nil
}

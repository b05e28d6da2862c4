package fsm

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
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
}

// FSM implements raft.FSM over a state.StateStore.
type FSM struct {
	logger hclog.Logger
	hooks  Hooks

	// state is the live store. Apply and Restore replace or use it; readers
	// load it at any time. Raft never runs Apply and Restore concurrently.
	state atomic.Pointer[state.StateStore]
}

var _ raft.FSM = (*FSM)(nil)

// New returns an FSM with an empty state store.
func New(cfg Config) (*FSM, error) {
	store, err := state.NewStateStore()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	f := &FSM{logger: logger.Named("fsm"), hooks: cfg.Hooks}
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
	metricPersist               = "persist"
	metricRestore               = "restore"
)

func metricKey(name string) []string { return []string{"drover", "fsm", name} }

// Apply applies one committed entry. It returns nil, or the error (typed,
// see structs.Error) when the store refused the write; nothing is written
// then. An entry of unknown type is skipped when it carries
// structs.IgnoreUnknownTypeFlag and otherwise panics: a server that cannot
// apply the log must stop rather than diverge.
func (f *FSM) Apply(log *raft.Log) any {
	if len(log.Data) == 0 {
		panic(fmt.Sprintf("fsm: empty log entry at index %d", log.Index))
	}
	buf := log.Data
	msgType := structs.MessageType(buf[0])
	ignoreUnknown := msgType&structs.IgnoreUnknownTypeFlag != 0
	msgType &^= structs.IgnoreUnknownTypeFlag

	switch msgType {
	case structs.NodeRegisterRequestType:
		return f.applyNodeRegister(buf[1:], log.Index)
	case structs.NodeDeregisterRequestType:
		return f.applyNodeDeregister(buf[1:], log.Index)
	case structs.NodeUpdateStatusRequestType:
		return f.applyNodeUpdateStatus(buf[1:], log.Index)
	case structs.NodeUpdateDrainRequestType:
		return f.applyNodeUpdateDrain(buf[1:], log.Index)
	case structs.NodeUpdateEligibilityRequestType:
		return f.applyNodeUpdateEligibility(buf[1:], log.Index)
	case structs.JobRegisterRequestType:
		return f.applyJobRegister(buf[1:], log.Index)
	case structs.JobDeregisterRequestType:
		return f.applyJobDeregister(buf[1:], log.Index)
	case structs.EvalUpdateRequestType:
		return f.applyEvalUpdate(buf[1:], log.Index)
	case structs.EvalDeleteRequestType:
		return f.applyEvalDelete(buf[1:], log.Index)
	case structs.AllocClientUpdateRequestType:
		return f.applyAllocClientUpdate(buf[1:], log.Index)
	case structs.ApplyPlanResultsRequestType:
		return f.applyPlanResults(buf[1:], log.Index)
	}
	if ignoreUnknown {
		f.logger.Warn("ignoring unknown message type", "msg_type", uint8(msgType), "index", log.Index)
		return nil
	}
	panic(fmt.Sprintf("fsm: unknown message type %d at index %d and no ignore flag: this server is too old for the log", uint8(msgType), log.Index))
}

// decode reads an entry body; a body that does not decode means the log is
// corrupt or written by an incompatible server, so it panics like an
// unknown type.
func decode(buf []byte, out any, t structs.MessageType, index uint64) {
	if err := structs.Decode(buf, out); err != nil {
		panic(fmt.Sprintf("fsm: decoding %s entry at index %d: %v", t, index, err))
	}
}

package fsm

import (
	"time"

	"github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

func (f *FSM) applyNodeRegister(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricNodeRegister), time.Now())
	var req structs.NodeRegisterRequest
	decode(buf, &req, structs.NodeRegisterRequestType, index)
	if req.Node == nil {
		return structs.NewError(structs.ErrCodeInvalid, "node register entry without a node")
	}
	store := f.State()
	if err := store.UpsertNode(index, req.Node, req.CreateEvals); err != nil {
		f.logger.Error("node register failed", "node_id", req.Node.ID, "error", err)
		return err
	}
	f.nodeChanged(store, req.Node.ID, index)
	f.evalsUpserted(req.CreateEvals)
	return nil
}

func (f *FSM) applyNodeDeregister(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricNodeDeregister), time.Now())
	var req structs.NodeDeregisterRequest
	decode(buf, &req, structs.NodeDeregisterRequestType, index)
	if err := f.State().DeleteNodes(index, req.NodeIDs); err != nil {
		f.logger.Error("node deregister failed", "node_ids", req.NodeIDs, "error", err)
		return err
	}
	return nil
}

func (f *FSM) applyNodeUpdateStatus(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricNodeUpdateStatus), time.Now())
	var req structs.NodeUpdateStatusRequest
	decode(buf, &req, structs.NodeUpdateStatusRequestType, index)
	store := f.State()
	if err := store.UpdateNodeStatus(index, req.NodeID, req.Status, req.UpdatedAt, req.NodeEvent, req.CreateEvals); err != nil {
		f.logger.Error("node status update failed", "node_id", req.NodeID, "error", err)
		return err
	}
	f.nodeChanged(store, req.NodeID, index)
	f.evalsUpserted(req.CreateEvals)
	return nil
}

func (f *FSM) applyNodeUpdateDrain(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricNodeUpdateDrain), time.Now())
	var req structs.NodeUpdateDrainRequest
	decode(buf, &req, structs.NodeUpdateDrainRequestType, index)
	store := f.State()
	if err := store.UpdateNodeDrain(index, &req); err != nil {
		f.logger.Error("node drain update failed", "node_id", req.NodeID, "error", err)
		return err
	}
	f.nodeChanged(store, req.NodeID, index)
	f.evalsUpserted(req.CreateEvals)
	return nil
}

func (f *FSM) applyNodeUpdateEligibility(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricNodeUpdateEligibility), time.Now())
	var req structs.NodeUpdateEligibilityRequest
	decode(buf, &req, structs.NodeUpdateEligibilityRequestType, index)
	store := f.State()
	if err := store.UpdateNodeEligibility(index, &req); err != nil {
		f.logger.Error("node eligibility update failed", "node_id", req.NodeID, "error", err)
		return err
	}
	f.nodeChanged(store, req.NodeID, index)
	f.evalsUpserted(req.CreateEvals)
	return nil
}

func (f *FSM) applyJobRegister(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricJobRegister), time.Now())
	var req structs.JobRegisterRequest
	decode(buf, &req, structs.JobRegisterRequestType, index)
	if req.Job == nil {
		return structs.NewError(structs.ErrCodeInvalid, "job register entry without a job")
	}
	store := f.State()
	if req.EnforceIndex {
		if err := checkJobModifyIndex(store, req.Job, req.JobModifyIndex); err != nil {
			return err
		}
	}
	if err := store.UpsertJob(index, req.Job, req.Eval); err != nil {
		f.logger.Error("job register failed", "job_id", req.Job.ID, "namespace", req.Job.Namespace, "error", err)
		return err
	}
	if req.Eval != nil {
		f.evalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return nil
}

// checkJobModifyIndex enforces a check-and-set register: want 0 means the
// job must not exist, otherwise its JobModifyIndex must equal want.
func checkJobModifyIndex(store *state.StateStore, job *structs.Job, want uint64) error {
	ns := job.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	existing, err := store.JobByID(nil, ns, job.ID)
	switch {
	case structs.CodeOf(err) == structs.ErrCodeNotFound:
		if want != 0 {
			return structs.NewError(structs.ErrCodeConflict,
				"enforcing job modify index %d: job %q does not exist", want, job.ID)
		}
		return nil
	case err != nil:
		return err
	case want == 0:
		return structs.NewError(structs.ErrCodeConflict,
			"enforcing job modify index 0: job %q already exists", job.ID)
	case existing.JobModifyIndex != want:
		return structs.NewError(structs.ErrCodeConflict,
			"enforcing job modify index %d: job %q has conflicting job modify index %d", want, job.ID, existing.JobModifyIndex)
	}
	return nil
}

func (f *FSM) applyJobDeregister(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricJobDeregister), time.Now())
	var req structs.JobDeregisterRequest
	decode(buf, &req, structs.JobDeregisterRequestType, index)
	ns := req.RequestNamespace()
	if err := f.State().DeregisterJob(index, ns, req.JobID, req.Purge, req.SubmitTime, req.Eval); err != nil {
		f.logger.Error("job deregister failed", "job_id", req.JobID, "namespace", ns, "error", err)
		return err
	}
	if req.Eval != nil {
		f.evalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return nil
}

func (f *FSM) applyEvalUpdate(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricEvalUpdate), time.Now())
	var req structs.EvalUpdateRequest
	decode(buf, &req, structs.EvalUpdateRequestType, index)
	if err := f.State().UpsertEvals(index, req.Evals); err != nil {
		f.logger.Error("eval update failed", "error", err)
		return err
	}
	f.evalsUpserted(req.Evals)
	return nil
}

func (f *FSM) applyEvalDelete(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricEvalDelete), time.Now())
	var req structs.EvalDeleteRequest
	decode(buf, &req, structs.EvalDeleteRequestType, index)
	if err := f.State().DeleteEvalsAndAllocs(index, req.Evals, req.Allocs); err != nil {
		f.logger.Error("eval delete failed", "error", err)
		return err
	}
	return nil
}

func (f *FSM) applyAllocClientUpdate(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricAllocClientUpdate), time.Now())
	var req structs.AllocUpdateRequest
	decode(buf, &req, structs.AllocClientUpdateRequestType, index)
	store := f.State()
	// Nodes on which an update finishes an allocation that was still live.
	freed := newNodeSet()
	for _, upd := range req.Alloc {
		if !upd.ClientTerminalStatus() {
			continue
		}
		if prev, err := store.AllocByID(nil, upd.ID); err == nil && !prev.ClientTerminalStatus() {
			freed.add(prev.NodeID)
		}
	}
	if err := store.UpdateAllocsFromClient(index, req.Alloc, req.Evals); err != nil {
		f.logger.Error("alloc client update failed", "error", err)
		return err
	}
	f.allocsTerminal(freed, index)
	f.evalsUpserted(req.Evals)
	return nil
}

func (f *FSM) applyPlanResults(buf []byte, index uint64) any {
	defer metrics.MeasureSince(metricKey(metricApplyPlanResults), time.Now())
	var req structs.ApplyPlanResultsRequest
	decode(buf, &req, structs.ApplyPlanResultsRequestType, index)
	store := f.State()
	// Nodes on which the plan stops an allocation that was still live.
	freed := newNodeSet()
	for _, stop := range req.AllocsStopped {
		if prev, err := store.AllocByID(nil, stop.ID); err == nil && !prev.TerminalStatus() {
			freed.add(prev.NodeID)
		}
	}
	if err := store.UpsertPlanResults(index, &req); err != nil {
		f.logger.Error("apply plan results failed", "eval_id", req.EvalID, "error", err)
		return err
	}
	f.allocsTerminal(freed, index)
	f.evalsUpserted(req.Evals)
	return nil
}

func (f *FSM) nodeChanged(store *state.StateStore, nodeID string, index uint64) {
	node, err := store.NodeByID(nil, nodeID)
	if err != nil {
		f.logger.Error("reading node after write", "node_id", nodeID, "error", err)
		return
	}
	f.hooks.NodeChanged(node, index)
}

func (f *FSM) evalsUpserted(evals []*structs.Evaluation) {
	if len(evals) > 0 {
		f.hooks.EvalsUpserted(evals)
	}
}

func (f *FSM) allocsTerminal(nodes *nodeSet, index uint64) {
	for _, id := range nodes.ids {
		f.hooks.AllocsTerminal(id, index)
	}
}

// nodeSet collects distinct node IDs in first-seen order, so hooks fire in
// a deterministic order.
type nodeSet struct {
	seen map[string]bool
	ids  []string
}

func newNodeSet() *nodeSet { return &nodeSet{seen: map[string]bool{}} }

func (s *nodeSet) add(id string) {
	if id != "" && !s.seen[id] {
		s.seen[id] = true
		s.ids = append(s.ids, id)
	}
}

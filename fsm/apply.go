package fsm

import (
	"time"

	"github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Each applyX decodes one entry and writes it to the batch. It returns
// (resp, nil) when the entry is done: resp is nil, or the error of a
// refusal found before anything was written; or (nil, err) when a write
// failed and may have left part of itself in the batch (see
// applyRunLocked). Hooks are queued with queueX and run after the commit.

func (f *FSM) applyNodeRegister(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodeRegister), time.Now())
	var req structs.NodeRegisterRequest
	if err := f.decodeLocked(buf, &req, structs.NodeRegisterRequestType, index); err != nil {
		return err, nil
	}
	if req.Node == nil {
		return structs.NewError(structs.ErrCodeInvalid, "node register entry without a node"), nil
	}
	if err := b.UpsertNode(index, req.Node, req.CreateEvals); err != nil {
		f.logger.Error("node register failed", "node_id", req.Node.ID, "error", err)
		return nil, err
	}
	f.queueNodeChanged(b, req.Node.ID, index)
	f.queueEvalsUpserted(req.CreateEvals)
	return nil, nil
}

func (f *FSM) applyNodeDeregister(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodeDeregister), time.Now())
	var req structs.NodeDeregisterRequest
	if err := f.decodeLocked(buf, &req, structs.NodeDeregisterRequestType, index); err != nil {
		return err, nil
	}
	if err := b.DeleteNodes(index, req.NodeIDs); err != nil {
		f.logger.Error("node deregister failed", "node_ids", req.NodeIDs, "error", err)
		return nil, err
	}
	return nil, nil
}

func (f *FSM) applyNodeUpdateStatus(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodeUpdateStatus), time.Now())
	var req structs.NodeUpdateStatusRequest
	if err := f.decodeLocked(buf, &req, structs.NodeUpdateStatusRequestType, index); err != nil {
		return err, nil
	}
	if err := b.UpdateNodeStatus(index, req.NodeID, req.Status, req.UpdatedAt, req.NodeEvent, req.CreateEvals); err != nil {
		f.logger.Error("node status update failed", "node_id", req.NodeID, "error", err)
		return nil, err
	}
	f.queueNodeChanged(b, req.NodeID, index)
	f.queueEvalsUpserted(req.CreateEvals)
	return nil, nil
}

func (f *FSM) applyNodeUpdateDrain(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodeUpdateDrain), time.Now())
	var req structs.NodeUpdateDrainRequest
	if err := f.decodeLocked(buf, &req, structs.NodeUpdateDrainRequestType, index); err != nil {
		return err, nil
	}
	if err := b.UpdateNodeDrain(index, &req); err != nil {
		f.logger.Error("node drain update failed", "node_id", req.NodeID, "error", err)
		return nil, err
	}
	f.queueNodeChanged(b, req.NodeID, index)
	f.queueEvalsUpserted(req.CreateEvals)
	return nil, nil
}

func (f *FSM) applyNodeUpdateEligibility(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodeUpdateEligibility), time.Now())
	var req structs.NodeUpdateEligibilityRequest
	if err := f.decodeLocked(buf, &req, structs.NodeUpdateEligibilityRequestType, index); err != nil {
		return err, nil
	}
	if err := b.UpdateNodeEligibility(index, &req); err != nil {
		f.logger.Error("node eligibility update failed", "node_id", req.NodeID, "error", err)
		return nil, err
	}
	f.queueNodeChanged(b, req.NodeID, index)
	f.queueEvalsUpserted(req.CreateEvals)
	return nil, nil
}

func (f *FSM) applyJobRegister(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricJobRegister), time.Now())
	var req structs.JobRegisterRequest
	if err := f.decodeLocked(buf, &req, structs.JobRegisterRequestType, index); err != nil {
		return err, nil
	}
	if req.Job == nil {
		return structs.NewError(structs.ErrCodeInvalid, "job register entry without a job"), nil
	}
	if req.EnforceIndex {
		if err := checkJobModifyIndex(b, req.Job, req.JobModifyIndex); err != nil {
			return err, nil
		}
	}
	if err := b.UpsertJob(index, req.Job, req.Eval); err != nil {
		f.logger.Error("job register failed", "job_id", req.Job.ID, "namespace", req.Job.Namespace, "error", err)
		return nil, err
	}
	if req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return nil, nil
}

// checkJobModifyIndex enforces a check-and-set register: want 0 means the
// job must not exist, otherwise its JobModifyIndex must equal want. It
// only reads.
func checkJobModifyIndex(b *state.Batch, job *structs.Job, want uint64) error {
	existing, err := b.JobByID(job.Namespace, job.ID)
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

// applyPeriodicLaunch registers a periodic job's child and records the
// launch; a launch not later than the recorded one is refused (code
// conflict) and writes nothing.
func (f *FSM) applyPeriodicLaunch(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricPeriodicLaunch), time.Now())
	var req structs.PeriodicLaunchRequest
	if err := f.decodeLocked(buf, &req, structs.PeriodicLaunchRequestType, index); err != nil {
		return err, nil
	}
	if req.Job == nil || req.Launch == nil {
		return structs.NewError(structs.ErrCodeInvalid, "periodic launch entry without a job or a launch"), nil
	}
	if err := b.LaunchPeriodicJob(index, req.Job, req.Eval, req.Launch); err != nil {
		if structs.CodeOf(err) == structs.ErrCodeConflict {
			return err, nil
		}
		f.logger.Error("periodic launch failed", "job_id", req.Job.ID, "namespace", req.Job.Namespace, "error", err)
		return nil, err
	}
	if req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return nil, nil
}

func (f *FSM) applyJobDeregister(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricJobDeregister), time.Now())
	var req structs.JobDeregisterRequest
	if err := f.decodeLocked(buf, &req, structs.JobDeregisterRequestType, index); err != nil {
		return err, nil
	}
	ns := req.RequestNamespace()
	if err := b.DeregisterJob(index, ns, req.JobID, req.Purge, req.SubmitTime, req.Eval); err != nil {
		// A purge that lost a race with another purge of the same job is
		// an answer to its caller, not a fault of this server.
		if structs.CodeOf(err) == structs.ErrCodeNotFound {
			f.logger.Debug("job deregister: job not found", "job_id", req.JobID, "namespace", ns)
		} else {
			f.logger.Error("job deregister failed", "job_id", req.JobID, "namespace", ns, "error", err)
		}
		return nil, err
	}
	if req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return nil, nil
}

func (f *FSM) applyEvalUpdate(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricEvalUpdate), time.Now())
	var req structs.EvalUpdateRequest
	if err := f.decodeLocked(buf, &req, structs.EvalUpdateRequestType, index); err != nil {
		return err, nil
	}
	if err := b.UpsertEvals(index, req.Evals); err != nil {
		f.logger.Error("eval update failed", "error", err)
		return nil, err
	}
	f.queueEvalsUpserted(req.Evals)
	return nil, nil
}

func (f *FSM) applyEvalDelete(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricEvalDelete), time.Now())
	var req structs.EvalDeleteRequest
	if err := f.decodeLocked(buf, &req, structs.EvalDeleteRequestType, index); err != nil {
		return err, nil
	}
	if err := b.DeleteEvalsAndAllocs(index, req.Evals, req.Allocs); err != nil {
		f.logger.Error("eval delete failed", "error", err)
		return nil, err
	}
	if err := b.DeleteDeployments(index, req.Deployments); err != nil {
		f.logger.Error("deployment delete failed", "error", err)
		return nil, err
	}
	return nil, nil
}

func (f *FSM) applyAllocClientUpdate(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricAllocClientUpdate), time.Now())
	var req structs.AllocUpdateRequest
	if err := f.decodeLocked(buf, &req, structs.AllocClientUpdateRequestType, index); err != nil {
		return err, nil
	}
	// Nodes on which an update finishes an allocation that was still live.
	var freed nodeSet
	for _, upd := range req.Alloc {
		if !upd.ClientTerminalStatus() {
			continue
		}
		if prev, err := b.AllocByID(upd.ID); err == nil && !prev.ClientTerminalStatus() {
			freed.add(prev.NodeID)
		}
	}
	if err := b.UpdateAllocsFromClient(index, req.Alloc, req.Evals); err != nil {
		f.logger.Error("alloc client update failed", "error", err)
		return nil, err
	}
	f.queueAllocsTerminal(freed.ids, index)
	f.queueEvalsUpserted(req.Evals)
	return nil, nil
}

func (f *FSM) applyPlanResults(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricApplyPlanResults), time.Now())
	var req structs.ApplyPlanResultsRequest
	if err := f.decodeLocked(buf, &req, structs.ApplyPlanResultsRequestType, index); err != nil {
		return err, nil
	}
	// Nodes on which the plan stops an allocation that was still live.
	var freed nodeSet
	for _, stop := range req.AllocsStopped {
		if prev, err := b.AllocByID(stop.ID); err == nil && !prev.TerminalStatus() {
			freed.add(prev.NodeID)
		}
	}
	if err := b.UpsertPlanResults(index, &req); err != nil {
		f.logger.Error("apply plan results failed", "eval_id", req.EvalID, "error", err)
		return nil, err
	}
	f.queueAllocsTerminal(freed.ids, index)
	f.queueEvalsUpserted(req.Evals)
	return nil, nil
}

func (f *FSM) applyAllocDesiredTransition(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricAllocTransition), time.Now())
	var req structs.AllocUpdateDesiredTransitionRequest
	if err := f.decodeLocked(buf, &req, structs.AllocUpdateDesiredTransitionRequestType, index); err != nil {
		return err, nil
	}
	if err := b.UpdateAllocsDesiredTransition(index, req.Allocs, req.UpdatedAt, req.Evals); err != nil {
		f.logger.Error("alloc desired transition update failed", "error", err)
		return nil, err
	}
	f.queueEvalsUpserted(req.Evals)
	return nil, nil
}

// hookCall is one queued hook call: exactly one of evals, node or
// terminalNode is set.
type hookCall struct {
	evals        []*structs.Evaluation
	node         *structs.Node
	terminalNode string
	index        uint64
}

// queueNodeChanged queues NodeChanged with the node as this entry left it
// (a later entry of the batch may change it again).
func (f *FSM) queueNodeChanged(b *state.Batch, nodeID string, index uint64) {
	node, err := b.NodeByID(nodeID)
	if err != nil {
		f.logger.Error("reading node after write", "node_id", nodeID, "error", err)
		return
	}
	f.pending = append(f.pending, hookCall{node: node, index: index})
}

func (f *FSM) queueEvalsUpserted(evals []*structs.Evaluation) {
	if len(evals) > 0 {
		f.pending = append(f.pending, hookCall{evals: evals})
	}
}

func (f *FSM) queueAllocsTerminal(nodeIDs []string, index uint64) {
	for _, id := range nodeIDs {
		f.pending = append(f.pending, hookCall{terminalNode: id, index: index})
	}
}

// runHooksLocked makes the queued hook calls, in order, and empties the
// queue.
func (f *FSM) runHooksLocked() {
	for i, c := range f.pending {
		switch {
		case c.evals != nil:
			f.hooks.EvalsUpserted(c.evals)
		case c.node != nil:
			f.hooks.NodeChanged(c.node, c.index)
		default:
			f.hooks.AllocsTerminal(c.terminalNode, c.index)
		}
		f.pending[i] = hookCall{} // drop references for the collector
	}
	f.pending = f.pending[:0]
}

// nodeSet collects distinct node IDs in first-seen order, so hooks fire in
// a deterministic order. The zero value is ready.
type nodeSet struct {
	seen map[string]bool
	ids  []string
}

func (s *nodeSet) add(id string) {
	if id == "" || s.seen[id] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[id] = true
	s.ids = append(s.ids, id)
}

// applyJobStability sets a job version's Stable flag. A version no longer
// kept is a refusal (the entry's result), found before anything is
// written.
func (f *FSM) applyJobStability(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.JobStabilityRequest
	if err := f.decodeLocked(buf, &req, structs.JobStabilityRequestType, index); err != nil {
		return err, nil
	}
	return refusal(b.UpdateJobStability(index, req.RequestNamespace(), req.JobID, req.JobVersion, req.Stable))
}

// applyScalingEvent applies a scaling request: the scaled job and its
// evaluation (when the count changed), and the event.
func (f *FSM) applyScalingEvent(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ScalingEventRegisterRequest
	if err := f.decodeLocked(buf, &req, structs.ScalingEventRegisterRequestType, index); err != nil {
		return err, nil
	}
	if req.JobModifyIndex != 0 {
		job, err := b.JobByID(req.RequestNamespace(), req.JobID)
		if err != nil {
			return err, nil
		}
		if job.JobModifyIndex != req.JobModifyIndex {
			return structs.NewError(structs.ErrCodeConflict,
				"enforcing job modify index %d: job %q has conflicting job modify index %d", req.JobModifyIndex, req.JobID, job.JobModifyIndex), nil
		}
	}
	if err := b.UpsertScalingEvent(index, &req); err != nil {
		f.logger.Error("scaling event failed", "job_id", req.JobID, "namespace", req.RequestNamespace(), "error", err)
		return nil, err
	}
	if req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return nil, nil
}

// applyNodeQuarantineUpdate writes a node's quarantine row (and, on a
// quarantine or its lift, the node's eligibility). A node gone meanwhile
// is a refusal: nothing is written.
func (f *FSM) applyNodeQuarantineUpdate(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodeQuarantine), time.Now())
	var req structs.NodeQuarantineUpdateRequest
	if err := f.decodeLocked(buf, &req, structs.NodeQuarantineUpdateRequestType, index); err != nil {
		return err, nil
	}
	resp, err := refusal(b.UpdateNodeQuarantine(index, &req))
	if resp != nil || err != nil {
		return resp, err
	}
	if req.Eligibility != "" || req.NodeEvent != nil {
		f.queueNodeChanged(b, req.Quarantine.NodeID, index)
	}
	f.queueEvalsUpserted(req.CreateEvals)
	return nil, nil
}

package server

import (
	"time"

	"github.com/drover-project/drover/server/deploymentwatcher"
	"github.com/drover-project/drover/structs"
)

// This file wires the deployment watcher (package deploymentwatcher) into
// the server as a leader hook; its writer turns the watcher's decisions
// into deployment Raft entries, each with an evaluation of the job.

const deploymentWatcherHookName = "deployment_watcher"

// deploymentWatcherHook runs the deployment watcher while leading.
type deploymentWatcherHook struct{ run leaderRun }

func (h *deploymentWatcherHook) Name() string { return deploymentWatcherHookName }

func (h *deploymentWatcherHook) Establish(s *Server) error {
	w, err := deploymentwatcher.New(deploymentwatcher.Config{
		Logger: s.logger,
		State:  func() deploymentwatcher.Reader { return s.fsm.State() },
		Writer: deploymentWriter{s: s},
	})
	if err != nil {
		return err
	}
	h.run.start(s, w.Run)
	return nil
}

func (h *deploymentWatcherHook) Revoke(*Server) error {
	h.run.stop()
	return nil
}

// deploymentWriter writes the watcher's decisions through Raft.
type deploymentWriter struct{ s *Server }

var _ deploymentwatcher.Writer = deploymentWriter{}

// FailDeployment writes the failure, the revert (the reverted version,
// registered as Job.Revert registers it) and an evaluation in one entry.
func (w deploymentWriter) FailDeployment(d *structs.Deployment, desc string, revertTo *structs.Job) error {
	_, _, err := w.fail(d, desc, revertTo)
	return err
}

// fail is FailDeployment, returning the entry's index and its evaluation.
func (w deploymentWriter) fail(d *structs.Deployment, desc string, revertTo *structs.Job) (uint64, *structs.Evaluation, error) {
	now := time.Now()
	req := &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: structs.DeploymentStatusFailed, StatusDescription: desc},
		WriteRequest:     structs.WriteRequest{Namespace: d.Namespace, Region: w.s.config.Region},
	}
	job := revertTo
	if revertTo != nil {
		req.Job = revertedJob(revertTo)
		req.Job.SubmitTime = now.UnixNano()
		job = req.Job
	} else {
		cur, err := w.s.fsm.State().JobByID(nil, d.Namespace, d.JobID)
		if err != nil {
			return 0, nil, err
		}
		job = cur
	}
	req.Eval = structs.NewEval(job, structs.EvalTriggerDeploymentWatcher, now)
	req.Eval.DeploymentID = d.ID
	index, _, err := w.s.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	return index, req.Eval, err
}

// PromoteDeployment promotes every canary of d, with an evaluation that
// places the rest.
func (w deploymentWriter) PromoteDeployment(d *structs.Deployment) error {
	job, err := w.s.fsm.State().JobByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return err
	}
	eval := structs.NewEval(job, structs.EvalTriggerDeploymentWatcher, time.Now())
	eval.DeploymentID = d.ID
	req := &structs.ApplyDeploymentPromoteRequest{Eval: eval, DeploymentPromoteRequest: structs.DeploymentPromoteRequest{
		DeploymentID: d.ID, All: true, WriteRequest: structs.WriteRequest{Namespace: d.Namespace, Region: w.s.config.Region}}}
	_, _, err = w.s.raftApply(structs.DeploymentPromoteRequestType, req)
	return err
}

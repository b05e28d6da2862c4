package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/server/deploymentwatcher"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Deployment is the deployment endpoint (structs/deployment.go): reads of
// deployments and their allocations, and the operator's changes
// (promote, fail, pause and resume, allocation health). Each change is one
// Raft entry with an evaluation of the job, so the scheduler acts on it.
type Deployment struct {
	srv *Server
}

// List lists the deployments of the request's namespace ("*": all) whose
// ID starts with Prefix, newest first.
func (d *Deployment) List(args *structs.DeploymentListRequest, reply *structs.DeploymentListResponse) error {
	if done, err := d.srv.forward("Deployment.List", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		list, err := st.DeploymentsByNamespace(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Deployments = list
		return st.Index(state.TableDeployments)
	})
}

// GetDeployment returns one deployment of the request's namespace; an
// unknown ID is a nil deployment (the HTTP API's 404), as in Nomad.
func (d *Deployment) GetDeployment(args *structs.DeploymentSpecificRequest, reply *structs.SingleDeploymentResponse) error {
	if done, err := d.srv.forward("Deployment.GetDeployment", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		dep, err := namespacedDeployment(st, ws, ns, args.DeploymentID)
		if err != nil {
			return 0, err
		}
		reply.Deployment = dep
		return st.Index(state.TableDeployments)
	})
}

// Allocations lists the allocations of a deployment.
func (d *Deployment) Allocations(args *structs.DeploymentSpecificRequest, reply *structs.AllocListResponse) error {
	if done, err := d.srv.forward("Deployment.Allocations", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Allocations = []*structs.AllocListStub{}
		dep, err := namespacedDeployment(st, ws, ns, args.DeploymentID)
		if err != nil || dep == nil {
			return 0, err
		}
		allocs, err := st.AllocsByDeployment(ws, dep.ID)
		if err != nil {
			return 0, err
		}
		for _, a := range allocs {
			reply.Allocations = append(reply.Allocations, a.Stub())
		}
		return maxTableIndex(st, state.TableAllocs, state.TableDeployments)
	})
}

// Promote promotes the canaries of a running deployment (of every group,
// or of the named ones); each must have its canaries healthy.
func (d *Deployment) Promote(args *structs.DeploymentPromoteRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Promote", args, args, reply); done {
		return err
	}
	dep, job, err := d.activeDeployment(args.RequestNamespace(), args.DeploymentID, "promote")
	if err != nil {
		return err
	}
	eval := deploymentEval(job, dep)
	req := &structs.ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: *args, Eval: eval}
	req.AuthToken = "" // the entry carries no secret
	index, _, err := d.srv.raftApply(structs.DeploymentPromoteRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = eval.ID, index, index, index
	return nil
}

// Fail fails a running deployment, and with auto_revert reverts its job to
// the newest stable version, as the deployment watcher does.
func (d *Deployment) Fail(args *structs.DeploymentFailRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Fail", args, args, reply); done {
		return err
	}
	dep, job, err := d.activeDeployment(args.RequestNamespace(), args.DeploymentID, "fail")
	if err != nil {
		return err
	}
	f, err := deploymentwatcher.FailureFor(d.srv.fsm.State(), nil, job, dep, structs.DeploymentStatusDescriptionFailedByUser)
	if err != nil {
		return err
	}
	index, eval, err := deploymentWriter{s: d.srv}.fail(dep, f.Description, f.RevertTo)
	if err != nil {
		return err
	}
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = eval.ID, index, index, index
	if f.RevertTo != nil {
		v := f.RevertTo.Version
		reply.RevertedJobVersion = &v
	}
	return nil
}

// Pause pauses a running deployment, or resumes a paused one.
func (d *Deployment) Pause(args *structs.DeploymentPauseRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Pause", args, args, reply); done {
		return err
	}
	verb := "resume"
	if args.Pause {
		verb = "pause"
	}
	dep, job, err := d.activeDeployment(args.RequestNamespace(), args.DeploymentID, verb)
	if err != nil {
		return err
	}
	u := &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusPaused,
		StatusDescription: structs.DeploymentStatusDescriptionPaused}
	req := &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: u,
		WriteRequest: structs.WriteRequest{Namespace: dep.Namespace, Region: args.Region}}
	if !args.Pause {
		u.Status, u.StatusDescription = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
		if dep.RequiresPromotion() || dep.Status == structs.DeploymentStatusPaused && needsPromotion(dep) {
			u.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
		}
		req.Eval = deploymentEval(job, dep)
	}
	index, _, err := d.srv.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return err
	}
	reply.DeploymentModifyIndex, reply.Index = index, index
	if req.Eval != nil {
		reply.EvalID, reply.EvalCreateIndex = req.Eval.ID, index
	}
	return nil
}

// needsPromotion reports whether a group has canaries not yet promoted,
// whatever the deployment's status.
func needsPromotion(d *structs.Deployment) bool {
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted {
			return true
		}
	}
	return false
}

// SetAllocHealth sets the health of allocations of a running deployment
// by hand (the groups' health_check = "manual", or an operator's
// verdict).
func (d *Deployment) SetAllocHealth(args *structs.DeploymentAllocHealthRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.SetAllocHealth", args, args, reply); done {
		return err
	}
	if len(args.HealthyAllocationIDs)+len(args.UnhealthyAllocationIDs) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "HealthyAllocationIDs",
			Message: "must specify at least one healthy or unhealthy allocation ID"}}}
	}
	dep, job, err := d.activeDeployment(args.RequestNamespace(), args.DeploymentID, "set the allocation health of")
	if err != nil {
		return err
	}
	eval := deploymentEval(job, dep)
	req := &structs.ApplyDeploymentAllocHealthRequest{DeploymentAllocHealthRequest: *args, Timestamp: time.Now().UTC(), Eval: eval}
	req.AuthToken = "" // the entry carries no secret
	index, _, err := d.srv.raftApply(structs.DeploymentAllocHealthRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = eval.ID, index, index, index
	return nil
}

// activeDeployment returns a running or paused deployment of namespace ns
// and its job, or a typed error naming verb.
func (d *Deployment) activeDeployment(ns, id, verb string) (*structs.Deployment, *structs.Job, error) {
	if id == "" {
		return nil, nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: "DeploymentID", Message: "missing deployment ID"}}}
	}
	st := d.srv.fsm.State()
	dep, err := namespacedDeployment(st, nil, ns, id)
	if err != nil {
		return nil, nil, err
	}
	if dep == nil {
		return nil, nil, structs.NewError(structs.ErrCodeNotFound, "deployment %q not found", id)
	}
	if !dep.Active() {
		return nil, nil, structs.NewError(structs.ErrCodeInvalid, "can't %s terminal deployment: status %q", verb, dep.Status)
	}
	job, err := st.JobByID(nil, dep.Namespace, dep.JobID)
	if errors.Is(err, structs.ErrNotFound) {
		return nil, nil, structs.NewError(structs.ErrCodeNotFound, "job %q of deployment %q not found", dep.JobID, id)
	}
	if err != nil {
		return nil, nil, err
	}
	return dep, job, nil
}

// namespacedDeployment returns deployment id when it is in namespace ns
// ("*": any), else nil.
func namespacedDeployment(st *state.StateStore, ws memdb.WatchSet, ns, id string) (*structs.Deployment, error) {
	dep, err := st.DeploymentByID(ws, id)
	if errors.Is(err, structs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ns != "*" && dep.Namespace != ns {
		return nil, nil
	}
	return dep, nil
}

// deploymentEval is the evaluation a change to dep creates.
func deploymentEval(job *structs.Job, dep *structs.Deployment) *structs.Evaluation {
	e := structs.NewEval(job, structs.EvalTriggerDeploymentWatcher, time.Now())
	e.DeploymentID = dep.ID
	return e
}

// maxTableIndex is the highest index of the tables.
func maxTableIndex(st *state.StateStore, tables ...string) (uint64, error) {
	var out uint64
	for _, t := range tables {
		i, err := st.Index(t)
		if err != nil {
			return 0, err
		}
		out = max(out, i)
	}
	return out, nil
}

// Deployments lists a job's deployments, newest first: with All, every
// one kept; without, those of the job as registered now.
func (j *Job) Deployments(args *structs.JobSpecificRequest, reply *structs.DeploymentListResponse) error {
	if done, err := j.srv.forward("Job.Deployments", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		list, err := st.DeploymentsByJobID(ws, ns, args.JobID, args.All)
		if err != nil {
			return 0, err
		}
		reply.Deployments = list
		return maxTableIndex(st, state.TableDeployments, state.TableJobs)
	})
}

// LatestDeployment returns a job's newest deployment (nil: none).
func (j *Job) LatestDeployment(args *structs.JobSpecificRequest, reply *structs.SingleDeploymentResponse) error {
	if done, err := j.srv.forward("Job.LatestDeployment", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		dep, err := st.LatestDeploymentByJobID(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Deployment = dep
		return st.Index(state.TableDeployments)
	})
}

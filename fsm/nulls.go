package fsm

import (
	"strconv"

	"github.com/drover-project/drover/structs"
)

// checkNulls refuses an entry that holds a null element in one of the
// lists the store walks (evaluations, allocations, task groups, tasks).
// Servers never write such an entry; one in the log means a bug or
// damage, and the store would dereference it and panic on every server.
// Refused, it writes nothing, on every server alike.
func checkNulls(req any) error {
	var errs nullErrs
	switch r := req.(type) {
	case *structs.NodeRegisterRequest:
		nulls(&errs, "CreateEvals", r.CreateEvals)
	case *structs.NodeUpdateStatusRequest:
		nulls(&errs, "CreateEvals", r.CreateEvals)
	case *structs.NodeUpdateDrainRequest:
		nulls(&errs, "CreateEvals", r.CreateEvals)
	case *structs.NodeUpdateEligibilityRequest:
		nulls(&errs, "CreateEvals", r.CreateEvals)
	case *structs.NodeQuarantineUpdateRequest:
		nulls(&errs, "CreateEvals", r.CreateEvals)
		if r.Quarantine != nil {
			nulls(&errs, "Quarantine.Faults", r.Quarantine.Faults)
		}
	case *structs.JobRegisterRequest:
		jobNulls(&errs, "Job", r.Job)
	case *structs.ScalingEventRegisterRequest:
	case *structs.PeriodicLaunchRequest:
		jobNulls(&errs, "Job", r.Job)
	case *structs.EvalUpdateRequest:
		nulls(&errs, "Evals", r.Evals)
	case *structs.AllocUpdateRequest:
		nulls(&errs, "Alloc", r.Alloc)
		nulls(&errs, "Evals", r.Evals)
	case *structs.ApplyPlanResultsRequest:
		jobNulls(&errs, "Job", r.Job)
		nulls(&errs, "AllocsStopped", r.AllocsStopped)
		nulls(&errs, "AllocsUpdated", r.AllocsUpdated)
		for i, a := range r.AllocsUpdated {
			if a != nil && jobHasNull(a.Job) {
				// Named only when found: this runs for every allocation
				// of every plan on every server.
				jobNulls(&errs, "AllocsUpdated["+strconv.Itoa(i)+"].Job", a.Job)
			}
		}
		nulls(&errs, "AllocGroups", r.AllocGroups)
		nulls(&errs, "Evals", r.Evals)
		if r.Deployment != nil {
			deploymentNulls(&errs, "Deployment", r.Deployment)
		}
		nulls(&errs, "DeploymentUpdates", r.DeploymentUpdates)
	case *structs.AllocUpdateDesiredTransitionRequest:
		nulls(&errs, "Evals", r.Evals)
	case *structs.VariablesRekeyRequest:
		nulls(&errs, "Vars", r.Vars)
	case *structs.DeploymentStatusUpdateRequest:
		jobNulls(&errs, "Job", r.Job)
	case *structs.ApplyDeploymentAllocHealthRequest:
		jobNulls(&errs, "Job", r.Job)
	}
	return errs.err()
}

// deploymentNulls checks a deployment's group states.
func deploymentNulls(errs *nullErrs, path string, d *structs.Deployment) {
	for name, g := range d.TaskGroups {
		if g == nil && errs.first == "" {
			errs.first = path + ".TaskGroups[" + strconv.Quote(name) + "]"
		}
	}
}

// recordNulls is checkNulls for a snapshot record: a job whose task
// groups or tasks hold a null is refused, as Apply refuses it, rather than
// restored for the scheduler and the API to trip over.
func recordNulls(v any) error {
	var errs nullErrs
	switch r := v.(type) {
	case *structs.Job:
		jobNulls(&errs, "Job", r)
	case *structs.Deployment:
		deploymentNulls(&errs, "Deployment", r)
	case *structs.NodeQuarantine:
		nulls(&errs, "NodeQuarantine.Faults", r.Faults)
	}
	return errs.err()
}

// jobNulls checks a job's task groups and their tasks; a null job is the
// caller's to judge.
func jobNulls(errs *nullErrs, path string, job *structs.Job) {
	if job == nil {
		return
	}
	nulls(errs, path+".TaskGroups", job.TaskGroups)
	for i, tg := range job.TaskGroups {
		if tg != nil {
			nulls(errs, path+".TaskGroups["+strconv.Itoa(i)+"].Tasks", tg.Tasks)
		}
	}
}

// jobHasNull reports, without building any name, whether job's task
// groups or tasks hold a null.
func jobHasNull(job *structs.Job) bool {
	if job == nil {
		return false
	}
	for _, tg := range job.TaskGroups {
		if tg == nil {
			return true
		}
		for _, t := range tg.Tasks {
			if t == nil {
				return true
			}
		}
	}
	return false
}

// nullErrs records the first null found.
type nullErrs struct{ first string }

func nulls[T any](errs *nullErrs, path string, list []*T) {
	if errs.first != "" {
		return
	}
	for i, p := range list {
		if p == nil {
			errs.first = path + "[" + strconv.Itoa(i) + "]"
			return
		}
	}
}

func (e *nullErrs) err() error {
	if e.first == "" {
		return nil
	}
	return structs.NewError(structs.ErrCodeInvalid, "entry holds a null element at %s", e.first)
}

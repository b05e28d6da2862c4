package server

import (
	"errors"
	"fmt"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
	"github.com/drover-project/drover/structs/templatespec"
)

// validateJob checks a canonicalized job: its own fields (Job.Validate) and
// each task's config against its driver's schema and its templates'
// text (templatespec), so that a config that
// does not fit its driver is refused at registration with the field named,
// not discovered on a client at run time. Every problem is reported at
// once. A driver Drover does not know is not an error here: no node offers
// it, so placement reports it, as Nomad does.
func validateJob(job *structs.Job) error {
	var all []structs.FieldError
	if err := job.Validate(); err != nil {
		var v *structs.ValidationError
		if !errors.As(err, &v) {
			return err
		}
		all = append(all, v.Errors...)
	}
	all = append(all, templatespec.Validate(job)...)
	for i, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for k, task := range tg.Tasks {
			if task == nil || driverspec.Builtin(task.Driver) == nil {
				continue
			}
			prefix := fmt.Sprintf("TaskGroups[%d].Tasks[%d].", i, k)
			for _, fe := range driverspec.ValidateTaskResources(task.Driver, task.Resources) {
				all = append(all, structs.FieldError{Field: prefix + fe.Field, Message: fe.Message})
			}
			err := driverspec.ValidateTaskConfig(task.Driver, task.Config)
			var v *structs.ValidationError
			if errors.As(err, &v) {
				for _, fe := range v.Errors {
					all = append(all, structs.FieldError{Field: prefix + fe.Field, Message: fe.Message})
				}
			} else if err != nil {
				return err
			}
		}
	}
	if len(all) > 0 {
		return &structs.ValidationError{Errors: all}
	}
	return nil
}

// Validate checks a job as Register would (canonicalized, then validated
// with each task's driver config) and writes nothing. Problems with the
// job are the reply, not an error, as in Nomad; any server answers.
func (j *Job) Validate(args *structs.JobValidateRequest, reply *structs.JobValidateResponse) error {
	if args.Job == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Job", Message: "missing job"}}}
	}
	reply.DriverConfigValidated = true
	err := checkJobShape(args.Job)
	if err == nil {
		job := args.Job.Copy()
		job.Canonicalize()
		err = validateJob(job)
	}
	return reply.SetProblems(err)
}

package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
)

// Dispatch runs a parameterized job once: it checks the payload and meta
// against the job's parameterized block (as Nomad does) and registers a
// child `<id>/dispatch-<unix>-<8 hex>` carrying them, with its evaluation,
// in one Raft entry. A request whose IdempotencyToken matches a child that
// is not dead answers with that child instead.
func (j *Job) Dispatch(args *structs.JobDispatchRequest, reply *structs.JobDispatchResponse) error {
	if done, err := j.srv.forward("Job.Dispatch", args, args, reply); done {
		return err
	}
	if args.JobID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "JobID", Message: "missing job ID"}}}
	}
	st := j.srv.fsm.State()
	ns := args.RequestNamespace()
	parent, err := st.JobByID(nil, ns, args.JobID)
	if err != nil {
		if errors.Is(err, structs.ErrNotFound) {
			return structs.NewError(structs.ErrCodeNotFound, "parameterized job %q not found", args.JobID)
		}
		return err
	}
	if !parent.IsParameterized() {
		return structs.NewError(structs.ErrCodeInvalid, "specified job %q is not a parameterized job", args.JobID)
	}
	if parent.Stop {
		return structs.NewError(structs.ErrCodeInvalid, "specified job %q is stopped", args.JobID)
	}
	if err := checkDispatch(parent, args); err != nil {
		return err
	}
	if args.IdempotencyToken != "" {
		existing, err := st.JobsByIDPrefix(nil, ns, parent.ID+structs.DispatchLaunchSuffix)
		if err != nil {
			return err
		}
		for _, c := range existing {
			if c.ParentID == parent.ID && c.DispatchIdempotencyToken == args.IdempotencyToken && c.Status != structs.JobStatusDead {
				reply.DispatchedJobID = c.ID
				reply.JobCreateIndex = c.CreateIndex
				reply.Index = c.ModifyIndex
				return nil
			}
		}
	}

	now := time.Now()
	child := dispatchedChild(parent, args, now)
	eval := structs.NewEval(child, structs.EvalTriggerJobRegister, now)
	index, _, err := j.srv.raftApply(structs.JobRegisterRequestType,
		&structs.JobRegisterRequest{Job: child, Eval: eval, WriteRequest: structs.WriteRequest{Namespace: ns}})
	if err != nil {
		return err
	}
	reply.DispatchedJobID = child.ID
	reply.EvalID = eval.ID
	reply.EvalCreateIndex = index
	reply.JobCreateIndex = index
	reply.Index = index
	return nil
}

// dispatchedChild derives the child of a dispatch, as Nomad does: a copy
// with ParentID, the payload, the parent's meta with the request's over
// it, Dispatched set and no parameterized block.
func dispatchedChild(parent *structs.Job, args *structs.JobDispatchRequest, now time.Time) *structs.Job {
	child := parent.Copy()
	child.ID = structs.DispatchedID(parent.ID, args.IdPrefixTemplate, now, structs.GenerateUUID()[:8])
	if args.Priority != 0 {
		child.Priority = args.Priority
	}
	child.Name = child.ID
	child.ParentID = parent.ID
	child.ParameterizedJob = nil
	child.Dispatched = true
	child.DispatchIdempotencyToken = args.IdempotencyToken
	child.Payload = args.Payload
	if len(args.Meta) > 0 {
		if child.Meta == nil {
			child.Meta = make(map[string]string, len(args.Meta))
		}
		maps.Copy(child.Meta, args.Meta)
	}
	child.Status, child.StatusDescription = "", ""
	child.Stable, child.Version = false, 0
	child.CreateIndex, child.ModifyIndex, child.JobModifyIndex = 0, 0, 0
	child.SubmitTime = now.UnixNano()
	return child
}

// checkDispatch checks a dispatch's payload and meta against the job's
// parameterized block, with Nomad's rules, naming the request's fields.
func checkDispatch(parent *structs.Job, args *structs.JobDispatchRequest) error {
	p := parent.ParameterizedJob
	var errs []structs.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, structs.FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	switch {
	case len(args.Payload) > structs.DispatchPayloadSizeLimit:
		add("Payload", "payload exceeds maximum size; %d > %d", len(args.Payload), structs.DispatchPayloadSizeLimit)
	case p.Payload == structs.DispatchPayloadForbidden && len(args.Payload) > 0:
		add("Payload", "payload is not allowed: the job's parameterized block forbids it")
	case p.Payload == structs.DispatchPayloadRequired && len(args.Payload) == 0:
		add("Payload", "payload is required by the job's parameterized block")
	}
	if args.Priority != 0 && (args.Priority < structs.MinPriority || args.Priority > structs.MaxPriority) {
		add("Priority", "must be between %d and %d; got %d", structs.MinPriority, structs.MaxPriority, args.Priority)
	}
	if t := args.IdPrefixTemplate; t != "" {
		if msg := structs.ValidName(t); msg != "" {
			add("IdPrefixTemplate", "%s", msg)
		}
	}
	var missing, unknown []string
	for _, k := range p.MetaRequired {
		if _, ok := args.Meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range args.Meta {
		if !slices.Contains(p.MetaRequired, k) && !slices.Contains(p.MetaOptional, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(missing) > 0 {
		add("Meta", "dispatch did not provide required meta keys: %s", strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		add("Meta", "dispatch request included unpermitted metadata keys: %s", strings.Join(unknown, ", "))
	}
	if len(errs) > 0 {
		return &structs.ValidationError{Errors: errs}
	}
	return nil
}

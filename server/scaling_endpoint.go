package server

import (
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Scaling is the scaling policy endpoint: the groups' scaling blocks as
// the policies an autoscaler reads. Policies are not stored on their
// own: they are derived from the jobs (structs.Job.ScalingPolicies), so
// a read walks the namespace's jobs.
type Scaling struct {
	srv *Server
}

// ListPolicies lists the policies of the request's namespace ("*": all),
// of one job when Job is set and of one type when Type is.
func (s *Scaling) ListPolicies(args *structs.ScalingPolicyListRequest, reply *structs.ScalingPolicyListResponse) error {
	if done, err := s.srv.forward("Scaling.ListPolicies", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		var (
			jobs []*structs.Job
			err  error
		)
		if ns == "*" {
			jobs, err = st.Jobs(ws)
		} else {
			jobs, err = st.JobsByIDPrefix(ws, ns, args.Job)
		}
		if err != nil {
			return 0, err
		}
		reply.Policies = []*structs.ScalingPolicyListStub{}
		for _, j := range jobs {
			if args.Job != "" && j.ID != args.Job {
				continue
			}
			for _, p := range j.ScalingPolicies() {
				if args.Type == "" || strings.HasPrefix(p.Type, args.Type) {
					reply.Policies = append(reply.Policies, p.Stub())
				}
			}
		}
		return st.Index(state.TableJobs)
	})
}

// GetPolicy returns one policy of the request's namespace by ID; an
// unknown ID is a nil policy (not an error), as in Nomad.
func (s *Scaling) GetPolicy(args *structs.ScalingPolicySpecificRequest, reply *structs.SingleScalingPolicyResponse) error {
	if done, err := s.srv.forward("Scaling.GetPolicy", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		jobs, err := st.JobsByIDPrefix(ws, ns, "")
		if err != nil {
			return 0, err
		}
		reply.Policy = nil
		for _, j := range jobs {
			for _, p := range j.ScalingPolicies() {
				if p.ID == args.ID {
					reply.Policy = p
				}
			}
		}
		return st.Index(state.TableJobs)
	})
}

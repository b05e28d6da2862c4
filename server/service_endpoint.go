package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// ServiceRegistration is the native service discovery endpoint: clients
// register and deregister their allocations' services (with their node's
// secret), users read them and may delete one.
type ServiceRegistration struct {
	srv *Server
}

// Upsert registers services. Every registration must be for an
// allocation on the node whose secret the request carries (AuthToken);
// anything else is refused and nothing is written.
func (r *ServiceRegistration) Upsert(args *structs.ServiceRegistrationUpsertRequest, reply *structs.GenericResponse) error {
	s := r.srv
	if done, err := s.forward("ServiceRegistration.Upsert", args, args, reply); done {
		return err
	}
	if len(args.Services) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Services", Message: "no services to register"}}}
	}
	st := s.fsm.State()
	for i, reg := range args.Services {
		if reg == nil {
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Services", Message: "must not hold null"}}}
		}
		if err := reg.Validate(); err != nil {
			var ve *structs.ValidationError
			if errors.As(err, &ve) {
				for j := range ve.Errors {
					ve.Errors[j].Field = "Services[" + strconv.Itoa(i) + "]." + ve.Errors[j].Field
				}
			}
			return err
		}
		if err := checkAllocOnNode(st, reg.AllocID, reg.NodeID, args.AuthToken); err != nil {
			return err
		}
	}
	index, err := s.serviceUpserts.submit(func(b *[]*structs.ServiceRegistration) { *b = append(*b, args.Services...) })
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// writeServiceBatch writes checked service registrations gathered from
// concurrent Upserts (groupCommit) as one Raft entry: every client
// registers its tasks' services as they start, so at scale they would
// otherwise cost one entry per node and flush, competing with the plan
// applier.
func (s *Server) writeServiceBatch(regs *[]*structs.ServiceRegistration) (uint64, error) {
	req := &structs.ServiceRegistrationUpsertRequest{Services: *regs}
	index, _, err := s.raftApply(structs.ServiceRegistrationUpsertRequestType, req)
	return index, err
}

// DeleteByAllocIDs removes the registrations of allocations on the node
// whose secret the request carries.
func (r *ServiceRegistration) DeleteByAllocIDs(args *structs.ServiceRegistrationDeleteByAllocIDsRequest, reply *structs.GenericResponse) error {
	s := r.srv
	if done, err := s.forward("ServiceRegistration.DeleteByAllocIDs", args, args, reply); done {
		return err
	}
	st := s.fsm.State()
	for _, id := range args.AllocIDs {
		a, err := st.AllocByID(nil, id)
		if errors.Is(err, structs.ErrNotFound) {
			continue // gone: so are its registrations
		}
		if err != nil {
			return err
		}
		if err := checkAllocOnNode(st, id, a.NodeID, args.AuthToken); err != nil {
			return err
		}
	}
	index, _, err := s.raftApply(structs.ServiceRegistrationDeleteByAllocIDsRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// checkAllocOnNode refuses unless allocation allocID is on node nodeID
// and secret is that node's SecretID.
func checkAllocOnNode(st *state.StateStore, allocID, nodeID, secret string) error {
	node, err := st.NodeByID(nil, nodeID)
	if err != nil || secret == "" || subtle.ConstantTimeCompare([]byte(node.SecretID), []byte(secret)) != 1 {
		return errNodeSecret(nodeID)
	}
	a, err := st.AllocByID(nil, allocID)
	if err != nil {
		return err
	}
	if a.NodeID != nodeID {
		return structs.NewError(structs.ErrCodePermissionDenied, "allocation %q is not on node %q", allocID, nodeID)
	}
	return nil
}

// DeleteByID removes one registration in the request's namespace. A user
// needs submit-job there (rpc_acl.go); with ACLs on, a caller whose secret
// is no ACL token must be the registration's node.
func (r *ServiceRegistration) DeleteByID(args *structs.ServiceRegistrationDeleteByIDRequest, reply *structs.GenericResponse) error {
	s := r.srv
	if done, err := s.forward("ServiceRegistration.DeleteByID", args, args, reply); done {
		return err
	}
	if args.ID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "ID", Message: "missing service registration ID"}}}
	}
	st := s.fsm.State()
	reg, err := st.ServiceRegistrationByID(nil, args.ID)
	if err != nil {
		return err
	}
	if s.aclOn {
		id, err := s.resolveToken(args.AuthToken)
		if err != nil {
			return err
		}
		if id.unknown {
			if err := checkAllocOnNode(st, reg.AllocID, reg.NodeID, args.AuthToken); err != nil {
				return err
			}
		}
	}
	index, _, err := s.raftApply(structs.ServiceRegistrationDeleteByIDRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// List returns the service names of the request's namespace ("*": all)
// that start with Prefix, each with the union of its instances' tags.
func (r *ServiceRegistration) List(args *structs.ServiceRegistrationListRequest, reply *structs.ServiceRegistrationListResponse) error {
	if done, err := r.srv.forward("ServiceRegistration.List", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return r.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		regs, err := st.ServiceRegistrationsByNamespace(ws, ns)
		if err != nil {
			return 0, err
		}
		if args.Prefix != "" {
			kept := regs[:0:0]
			for _, reg := range regs {
				if strings.HasPrefix(reg.ServiceName, args.Prefix) {
					kept = append(kept, reg)
				}
			}
			regs = kept
		}
		reply.Services = state.ServiceRegistrationStubs(regs)
		return st.Index(state.TableServiceRegs)
	})
}

// GetService returns the registrations of one service; Choose picks n of
// them by rendezvous hashing on a key (a stable choice per key).
func (r *ServiceRegistration) GetService(args *structs.ServiceRegistrationByNameRequest, reply *structs.ServiceRegistrationByNameResponse) error {
	if done, err := r.srv.forward("ServiceRegistration.GetService", args, args, reply); done {
		return err
	}
	n, key := 0, ""
	if args.Choose != "" {
		var ok bool
		if n, key, ok = structs.ParseChoose(args.Choose); !ok {
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: "choose",
				Message: "must be <number>|<key>, such as 2|" + "abc; got " + args.Choose}}}
		}
	}
	ns := args.RequestNamespace()
	return r.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		regs, err := st.ServiceRegistrationsByName(ws, ns, args.ServiceName)
		if err != nil {
			return 0, err
		}
		if regs == nil {
			regs = []*structs.ServiceRegistration{}
		}
		if n > 0 {
			regs = chooseServices(regs, n, key)
		}
		reply.Services = regs
		return st.Index(state.TableServiceRegs)
	})
}

// chooseServices orders regs by the hash of key with each ID (rendezvous
// hashing) and keeps the first n: one requester (key) keeps getting the
// same instances while they exist.
func chooseServices(regs []*structs.ServiceRegistration, n int, key string) []*structs.ServiceRegistration {
	type ranked struct {
		hash string
		reg  *structs.ServiceRegistration
	}
	rs := make([]ranked, len(regs))
	for i, reg := range regs {
		sum := sha256.Sum256([]byte(key + "\x00" + reg.ID))
		rs[i] = ranked{hex.EncodeToString(sum[:]), reg}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].hash < rs[j].hash })
	n = min(n, len(rs))
	out := make([]*structs.ServiceRegistration, n)
	for i := range out {
		out[i] = rs[i].reg
	}
	return out
}

// GetServiceRegistrations returns a job's registrations; Services is nil
// when the job does not exist.
func (j *Job) GetServiceRegistrations(args *structs.JobServiceRegistrationsRequest, reply *structs.JobServiceRegistrationsResponse) error {
	if done, err := j.srv.forward("Job.GetServiceRegistrations", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if _, err := st.JobByID(ws, ns, args.JobID); errors.Is(err, structs.ErrNotFound) {
			reply.Services = nil
			return st.Index(state.TableJobs)
		} else if err != nil {
			return 0, err
		}
		regs, err := st.ServiceRegistrationsByJobID(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		if regs == nil {
			regs = []*structs.ServiceRegistration{}
		}
		reply.Services = regs
		return st.Index(state.TableServiceRegs)
	})
}

// GetServiceRegistrations returns an allocation's registrations; Services
// is nil when the allocation does not exist.
func (a *Alloc) GetServiceRegistrations(args *structs.AllocServiceRegistrationsRequest, reply *structs.AllocServiceRegistrationsResponse) error {
	if done, err := a.srv.forward("Alloc.GetServiceRegistrations", args, args, reply); done {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if _, err := st.AllocByID(ws, args.AllocID); errors.Is(err, structs.ErrNotFound) {
			reply.Services = nil
			return st.Index(state.TableAllocs)
		} else if err != nil {
			return 0, err
		}
		regs, err := st.ServiceRegistrationsByAllocID(ws, args.AllocID)
		if err != nil {
			return 0, err
		}
		if regs == nil {
			regs = []*structs.ServiceRegistration{}
		}
		reply.Services = regs
		return st.Index(state.TableServiceRegs)
	})
}

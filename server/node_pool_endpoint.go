package server

import (
	"errors"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// NodePool is the node pool endpoint: list, read, write and delete pools,
// and list a pool's nodes and jobs.
type NodePool struct {
	srv *Server
}

// List returns the pools whose name starts with Prefix, built-in ones
// included, sorted by name. A blocking query.
func (p *NodePool) List(args *structs.GenericRequest, reply *structs.NodePoolListResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.List", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		pools, err := st.NodePools(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.NodePools = pools
		return st.Index(state.TableNodePools)
	})
}

// GetNodePool returns one pool; NodePool is nil when it does not exist.
func (p *NodePool) GetNodePool(args *structs.NodePoolSpecificRequest, reply *structs.SingleNodePoolResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.GetNodePool", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		pool, err := st.NodePoolByName(ws, args.Name)
		switch {
		case errors.Is(err, structs.ErrNotFound):
			reply.NodePool = nil
		case err != nil:
			return 0, err
		default:
			reply.NodePool = pool
			if pool.ModifyIndex > 0 {
				return pool.ModifyIndex, nil
			}
		}
		return st.Index(state.TableNodePools)
	})
}

// UpsertNodePools creates or replaces pools. Built-in pools, invalid
// names and a per-pool scheduler configuration are refused by name.
func (p *NodePool) UpsertNodePools(args *structs.NodePoolUpsertRequest, reply *structs.GenericResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.UpsertNodePools", args, args, reply); done {
		return err
	}
	if len(args.NodePools) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodePools", Message: "must name at least one node pool"}}}
	}
	for _, pool := range args.NodePools {
		if pool == nil {
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodePools", Message: "must not hold null"}}}
		}
		if err := pool.Validate(); err != nil {
			return err
		}
	}
	index, _, err := s.raftApply(structs.NodePoolUpsertRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// DeleteNodePools deletes pools. A built-in pool, one that does not exist
// and one that nodes or jobs still use are refused (with codes invalid,
// not_found and conflict) and nothing is deleted.
func (p *NodePool) DeleteNodePools(args *structs.NodePoolDeleteRequest, reply *structs.GenericResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.DeleteNodePools", args, args, reply); done {
		return err
	}
	if len(args.Names) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Names", Message: "must name at least one node pool"}}}
	}
	index, _, err := s.raftApply(structs.NodePoolDeleteRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// ListNodes lists the nodes of a pool ("all": every node; Prefix filters
// by node ID). A pool that does not exist is not_found.
func (p *NodePool) ListNodes(args *structs.NodePoolSpecificRequest, reply *structs.NodePoolNodesResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.ListNodes", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if _, err := st.NodePoolByName(ws, args.Name); err != nil {
			return 0, err
		}
		nodes, err := st.NodesByIDPrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Nodes = make([]*structs.NodeListStub, 0, len(nodes))
		for _, n := range nodes {
			if structs.InNodePool(args.Name, n.NodePool) {
				reply.Nodes = append(reply.Nodes, n.Stub())
			}
		}
		return st.Index(state.TableNodes)
	})
}

// ListJobs lists the jobs of a pool in the request's namespace ("*":
// every namespace); a pool that does not exist is not_found. The pool
// "all" lists the jobs that name it.
func (p *NodePool) ListJobs(args *structs.NodePoolSpecificRequest, reply *structs.NodePoolJobsResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.ListJobs", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if _, err := st.NodePoolByName(ws, args.Name); err != nil {
			return 0, err
		}
		jobs, err := st.Jobs(ws)
		if err != nil {
			return 0, err
		}
		reply.Jobs = []*structs.JobListStub{}
		for _, j := range jobs {
			pool := j.NodePool
			if pool == "" {
				pool = structs.NodePoolDefault
			}
			if pool != args.Name || (ns != "*" && j.Namespace != ns) || !strings.HasPrefix(j.ID, args.Prefix) {
				continue
			}
			summary, err := st.JobSummary(ws, j.Namespace, j.ID)
			if err != nil && !errors.Is(err, structs.ErrNotFound) {
				return 0, err
			}
			reply.Jobs = append(reply.Jobs, j.Stub(summary))
		}
		return st.Index(state.TableJobs)
	})
}

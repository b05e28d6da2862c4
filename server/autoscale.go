package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/server/autoscaler"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// This file wires the node pool autoscaler (package autoscaler) into the
// server as a leader hook, its writer (Raft applies and the node
// endpoints), and the NodePool endpoint's autoscaler methods.

const autoscalerHookName = "autoscaler"

// autoscalerHook runs the autoscaler while leading.
type autoscalerHook struct{ run leaderRun }

func (h *autoscalerHook) Name() string { return autoscalerHookName }

func (h *autoscalerHook) Establish(s *Server) error {
	a, err := autoscaler.New(autoscaler.Config{
		Logger:            s.logger,
		State:             func() autoscaler.Reader { return s.fsm.State() },
		Blocked:           s.blocked,
		Writer:            autoscaleWriter{s: s},
		Providers:         s.config.AutoscaleProviders,
		Interval:          s.config.AutoscaleInterval,
		ReconcileInterval: s.config.AutoscaleReconcileInterval,
	})
	if err != nil {
		return err
	}
	h.run.start(s, a.Run)
	return nil
}

func (h *autoscalerHook) Revoke(*Server) error {
	h.run.stop()
	return nil
}

// autoscaleWriter writes the autoscaler's decisions.
type autoscaleWriter struct{ s *Server }

var _ autoscaler.Writer = autoscaleWriter{}

func (w autoscaleWriter) UpdateInstances(req *structs.PoolInstanceUpdateRequest) error {
	req.Region = w.s.config.Region
	_, _, err := w.s.raftApply(structs.PoolInstanceUpdateRequestType, req)
	return err
}

// SetNodeEligibility goes through Node.UpdateEligibility (with its
// evaluations when the node can take work again).
func (w autoscaleWriter) SetNodeEligibility(nodeID string, eligible bool) error {
	e := structs.NodeSchedulingIneligible
	msg := "Node marked as ineligible: its autoscaled instance is held"
	if eligible {
		e, msg = structs.NodeSchedulingEligible, "Node marked as eligible: its autoscaled instance runs"
	}
	args := &structs.NodeUpdateEligibilityRequest{NodeID: nodeID, Eligibility: e,
		NodeEvent:    &structs.NodeEvent{Message: msg, Subsystem: "Autoscaler", Timestamp: time.Now()},
		WriteRequest: structs.WriteRequest{Region: w.s.config.Region}}
	return (&Node{srv: w.s}).UpdateEligibility(args, &structs.NodeUpdateResponse{})
}

// DrainNode starts a drain without a deadline (the work finishes).
func (w autoscaleWriter) DrainNode(nodeID string) error {
	args := &structs.NodeUpdateDrainRequest{NodeID: nodeID, DrainStrategy: &structs.DrainStrategy{},
		NodeEvent:    &structs.NodeEvent{Message: "Node drain strategy set: its autoscaled instance drains", Subsystem: "Autoscaler", Timestamp: time.Now()},
		WriteRequest: structs.WriteRequest{Region: w.s.config.Region}}
	return (&Node{srv: w.s}).UpdateDrain(args, &structs.NodeUpdateResponse{})
}

// GetAutoscaler returns a pool's autoscaler configuration (nil: none)
// and its status (events, quota back-off). A blocking query.
func (p *NodePool) GetAutoscaler(args *structs.NodePoolSpecificRequest, reply *structs.PoolAutoscalerResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.GetAutoscaler", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Autoscaler, reply.Status = nil, nil
		a, err := st.PoolAutoscalerByPool(ws, args.Name)
		if err != nil && !errors.Is(err, structs.ErrNotFound) {
			return 0, err
		}
		reply.Autoscaler = a
		status, err := st.PoolAutoscaleStatusByPool(ws, args.Name)
		if err != nil && !errors.Is(err, structs.ErrNotFound) {
			return 0, err
		}
		reply.Status = status
		i1, err := st.Index(state.TablePoolAutoscalers)
		if err != nil {
			return 0, err
		}
		i2, err := st.Index(state.TablePoolAutoscaleStats)
		return max(i1, i2), err
	})
}

// UpsertAutoscaler sets a pool's autoscaler configuration; an invalid one
// is refused naming its field, one for a pool that does not exist is
// not_found, and nothing is written.
func (p *NodePool) UpsertAutoscaler(args *structs.PoolAutoscalerUpsertRequest, reply *structs.GenericResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.UpsertAutoscaler", args, args, reply); done {
		return err
	}
	if args.Autoscaler == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Autoscaler", Message: "missing autoscaler configuration"}}}
	}
	a := args.Autoscaler.Copy()
	a.Canonicalize()
	if err := a.Validate(); err != nil {
		return err
	}
	req := *args
	req.Autoscaler, req.Delete = a, ""
	index, _, err := s.raftApply(structs.PoolAutoscalerUpsertRequestType, &req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// DeleteAutoscaler deletes a pool's autoscaler configuration (not_found
// when there is none). Its instances stay, and no longer change.
func (p *NodePool) DeleteAutoscaler(args *structs.PoolAutoscalerUpsertRequest, reply *structs.GenericResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.DeleteAutoscaler", args, args, reply); done {
		return err
	}
	if args.Delete == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Delete", Message: "must name a node pool"}}}
	}
	req := *args
	req.Autoscaler = nil
	index, _, err := s.raftApply(structs.PoolAutoscalerUpsertRequestType, &req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// ListInstances lists a pool's autoscaled instances ("all": every
// pool's), gone ones included until they are forgotten. A blocking query.
func (p *NodePool) ListInstances(args *structs.NodePoolSpecificRequest, reply *structs.PoolInstancesResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.ListInstances", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		pool := args.Name
		if pool == structs.NodePoolAll {
			pool = ""
		} else if _, err := st.NodePoolByName(ws, pool); err != nil {
			return 0, err
		}
		list, err := st.PoolInstances(ws, pool)
		if err != nil {
			return 0, err
		}
		reply.Instances = list
		if reply.Instances == nil {
			reply.Instances = []*structs.PoolInstance{}
		}
		return st.Index(state.TablePoolInstances)
	})
}

// SetInstanceBehavior sets an instance's behaviour (run, hold, drain);
// an unknown behaviour is refused naming the field, an unknown instance
// is not_found.
func (p *NodePool) SetInstanceBehavior(args *structs.PoolInstanceBehaviorRequest, reply *structs.GenericResponse) error {
	s := p.srv
	if done, err := s.forward("NodePool.SetInstanceBehavior", args, args, reply); done {
		return err
	}
	if !structs.ValidInstanceBehavior(args.Behavior) {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Behavior", Message: "must be run, hold or drain; got " + args.Behavior}}}
	}
	if _, err := s.fsm.State().PoolInstanceByID(nil, args.InstanceID); err != nil {
		return err
	}
	req := *args
	req.Time = time.Now().UnixNano()
	index, _, err := s.raftApply(structs.PoolInstanceBehaviorRequestType, &req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

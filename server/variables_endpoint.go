package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Variables is the variables endpoint (Nomad's Variables.Apply, Read and
// List). The leader encrypts a write with the active root key before it
// enters Raft; reads decrypt on the server that answers. Who may do what
// on which path is in rpcACLRules (variableRule, variableListFilter).
type Variables struct {
	srv *Server
}

// variableNamespace is the namespace a variable request acts in: the
// variable's own, else the request's.
func variableNamespace(v *structs.VariableDecrypted, requestNS string) string {
	if v != nil && v.Namespace != "" {
		return v.Namespace
	}
	return requestNS
}

// Apply writes or deletes one variable, with check-and-set for the cas
// operations. A conflict is an answer (Result conflict, Conflict the
// current variable), not an error.
func (v *Variables) Apply(args *structs.VariablesApplyRequest, reply *structs.VariablesApplyResponse) error {
	s := v.srv
	if done, err := s.forward("Variables.Apply", args, args, reply); done {
		return err
	}
	if args.Var == nil {
		return structs.NewError(structs.ErrCodeInvalid, "variable missing from the request")
	}
	in := *args.Var // the caller's: copied before it is changed
	in.Namespace = variableNamespace(args.Var, args.RequestNamespace())
	expected := in.ModifyIndex
	in.CreateIndex, in.ModifyIndex = 0, 0
	st := s.fsm.State()
	req := structs.VarApplyStateRequest{Op: args.Op}
	switch args.Op {
	case structs.VarOpSet, structs.VarOpCAS:
		if err := in.Validate(); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		in.CreateTime, in.ModifyTime = now, now
		enc, err := s.encryptVariable(st, &in)
		if err != nil {
			return err
		}
		req.Var = enc
	case structs.VarOpDelete, structs.VarOpDeleteCAS:
		if err := structs.ValidateVariablePath(in.Path); err != nil {
			return err
		}
		req.Var = &structs.VariableEncrypted{VariableMetadata: in.VariableMetadata}
	default:
		return structs.NewError(structs.ErrCodeInvalid, "unknown variable operation %q (want set, cas, delete or delete-cas)", args.Op)
	}
	req.Var.ModifyIndex = expected
	index, _, err := s.raftApply(structs.VarApplyStateRequestType, &req)
	var conflict *structs.VarConflictError
	if errors.As(err, &conflict) {
		reply.Op, reply.Result = args.Op, structs.VarOpResultConflict
		c := conflict.Conflict
		if len(c.Data) == 0 {
			reply.Conflict = &structs.VariableDecrypted{VariableMetadata: c.VariableMetadata}
			return nil
		}
		reply.Conflict, err = s.decryptVariable(c)
		return err
	}
	if err != nil {
		return err
	}
	reply.Op, reply.Result, reply.Index = args.Op, structs.VarOpResultOk, index
	if req.Var.Data != nil {
		reply.Output = &structs.VariableDecrypted{VariableMetadata: s.writtenMetadata(&in, index), Items: in.Items}
	}
	return nil
}

// writtenMetadata is the metadata of the variable written at index: as
// stored, or, if a later write has already changed or removed it, as
// that entry wrote it.
func (s *Server) writtenMetadata(in *structs.VariableDecrypted, index uint64) structs.VariableMetadata {
	m := in.VariableMetadata
	m.CreateIndex, m.ModifyIndex = index, index
	cur, err := s.fsm.State().VariableByPath(nil, in.Namespace, in.Path)
	switch {
	case err != nil:
	case cur.ModifyIndex == index:
		return cur.VariableMetadata
	case cur.CreateIndex <= index:
		m.CreateIndex, m.CreateTime = cur.CreateIndex, cur.CreateTime
	}
	return m
}

// Read returns one variable, decrypted; Data is nil if there is none.
func (v *Variables) Read(args *structs.VariablesReadRequest, reply *structs.VariablesReadResponse) error {
	s := v.srv
	if done, err := s.forward("Variables.Read", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		enc, err := st.VariableByPath(ws, ns, args.Path)
		if structs.CodeOf(err) == structs.ErrCodeNotFound {
			reply.Data = nil
			return st.Index(state.TableVariables)
		}
		if err != nil {
			return 0, err
		}
		reply.Data, err = s.decryptVariable(enc)
		if err != nil {
			return 0, err
		}
		return enc.ModifyIndex, nil
	})
}

// List returns the metadata of the variables under Prefix (namespace "*":
// every namespace), sorted by namespace and path. Items are never listed.
func (v *Variables) List(args *structs.VariablesListRequest, reply *structs.VariablesListResponse) error {
	s := v.srv
	if done, err := s.forward("Variables.List", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		vars, err := st.Variables(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Data = make([]*structs.VariableMetadata, 0, len(vars))
		for _, enc := range vars {
			m := enc.VariableMetadata
			reply.Data = append(reply.Data, &m)
		}
		return st.Index(state.TableVariables)
	})
}

// variableApplyAllowed: write for set and cas, destroy for the deletes,
// on the variable's path in its namespace.
func variableApplyAllowed(a *acl.ACL, _ *Server, args any) bool {
	r, ok := args.(*structs.VariablesApplyRequest)
	if !ok || r.Var == nil {
		return a.IsManagement()
	}
	capability := acl.VariablesCapabilityWrite
	if r.Op == structs.VarOpDelete || r.Op == structs.VarOpDeleteCAS {
		capability = acl.VariablesCapabilityDestroy
	}
	return a.AllowVariableOperation(variableNamespace(r.Var, r.RequestNamespace()), r.Var.Path, capability)
}

// variableReadAllowed: read on the path.
func variableReadAllowed(a *acl.ACL, _ *Server, args any) bool {
	r, ok := args.(*structs.VariablesReadRequest)
	return ok && a.AllowVariableOperation(r.RequestNamespace(), r.Path, acl.VariablesCapabilityRead)
}

// variableListAllowed: some variables rule in the namespace; the answer
// is then filtered path by path.
func variableListAllowed(a *acl.ACL, _ *Server, args any) bool {
	return a.AllowVariableSearch(requestNamespace(args))
}

// variableListFilter keeps the variables the caller may list.
func variableListFilter(a *acl.ACL, reply any) bool {
	r, ok := reply.(*structs.VariablesListResponse)
	if !ok {
		return true
	}
	kept := r.Data[:0:0]
	for _, m := range r.Data {
		if a.AllowVariableOperation(m.Namespace, m.Path, acl.VariablesCapabilityList) {
			kept = append(kept, m)
		}
	}
	r.Data = kept
	return true
}

// variableConflictFilter redacts a conflict's items from a caller who may
// not read the variable (Nomad's conflict-redacted).
func variableConflictFilter(a *acl.ACL, reply any) bool {
	r, ok := reply.(*structs.VariablesApplyResponse)
	if !ok || r.Conflict == nil || r.Conflict.Items == nil {
		return true
	}
	if !a.AllowVariableOperation(r.Conflict.Namespace, r.Conflict.Path, acl.VariablesCapabilityRead) {
		c := *r.Conflict
		c.Items = nil
		r.Conflict, r.Result = &c, structs.VarOpResultRedacted
	}
	return true
}

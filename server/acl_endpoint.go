package server

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// ACL is the ACL endpoint: policies, tokens, bootstrap. Who may call each
// method is in rpcACLRules; the methods open to any token limit here what
// they show. With ACLs disabled every method answers "ACL support
// disabled", as Nomad does.
type ACL struct {
	srv *Server
}

// validPolicyName is Nomad's rule for policy names.
var validPolicyName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

var errACLDisabled = structs.NewError(structs.ErrCodeInvalid, "ACL support disabled")

// anonymousToken is what self answers for a request without a token.
func anonymousToken() *structs.ACLToken {
	return &structs.ACLToken{AccessorID: structs.AnonymousAccessorID, Name: "Anonymous Token",
		Type: structs.ACLClientToken, Policies: []string{structs.AnonymousPolicyName}}
}

// Bootstrap creates the first management token, once. The answer is the
// only time its secret is shown. Nomad's reset (a reset-index file in the
// leader's data directory) is not supported.
func (a *ACL) Bootstrap(args *structs.ACLTokenBootstrapRequest, reply *structs.ACLTokenUpsertResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.Bootstrap", args, args, reply); done {
		return err
	}
	if idx, err := s.fsm.State().ACLBootstrapIndex(); err != nil {
		return err
	} else if idx != 0 {
		return bootstrapDone(idx)
	}
	secret := structs.GenerateUUID()
	args.ResetIndex = 0
	args.Token = &structs.ACLToken{AccessorID: structs.GenerateUUID(), SecretHash: structs.HashSecret(secret),
		Name: "Bootstrap Token", Type: structs.ACLManagementToken, Global: true, CreateTime: time.Now().UTC()}
	index, _, err := s.raftApply(structs.ACLTokenBootstrapRequestType, args)
	if structs.CodeOf(err) == structs.ErrCodeConflict {
		// Another bootstrap committed first.
		idx, _ := s.fsm.State().ACLBootstrapIndex()
		return bootstrapDone(idx)
	}
	if err != nil {
		return err
	}
	tok, err := s.fsm.State().ACLTokenByAccessor(nil, args.Token.AccessorID)
	if err != nil {
		return err
	}
	out := *tok
	out.SecretID = secret
	reply.Tokens = []*structs.ACLToken{&out}
	reply.Index = index
	return nil
}

// bootstrapDone is Nomad's refusal of a second bootstrap (HTTP 400).
func bootstrapDone(index uint64) error {
	return structs.NewError(structs.ErrCodeInvalid, "ACL bootstrap already done (reset index: %d)", index)
}

// UpsertPolicies writes policies; each one's rules must parse.
func (a *ACL) UpsertPolicies(args *structs.ACLPolicyUpsertRequest, reply *structs.GenericResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.UpsertPolicies", args, args, reply); done {
		return err
	}
	if len(args.Policies) == 0 {
		return structs.NewError(structs.ErrCodeInvalid, "Must specify as least one policy")
	}
	for _, p := range args.Policies {
		if p == nil || !validPolicyName.MatchString(p.Name) {
			return structs.NewError(structs.ErrCodeInvalid, "Invalid policy name: must be 1-128 letters, digits and dashes")
		}
		if _, err := acl.Parse(p.Name, p.Rules); err != nil {
			return structs.NewError(structs.ErrCodeInvalid, "Policy %q: %v", p.Name, err)
		}
	}
	index, _, err := s.raftApply(structs.ACLPolicyUpsertRequestType, args)
	reply.Index = index
	return err
}

// DeletePolicies removes policies by name.
func (a *ACL) DeletePolicies(args *structs.ACLPolicyDeleteRequest, reply *structs.GenericResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.DeletePolicies", args, args, reply); done {
		return err
	}
	if len(args.Names) == 0 {
		return structs.NewError(structs.ErrCodeInvalid, "Must specify as least one policy")
	}
	index, _, err := s.raftApply(structs.ACLPolicyDeleteRequestType, args)
	reply.Index = index
	return err
}

// caller resolves the request's own token (cached) for the methods that
// show a token only its own things.
func (s *Server) caller(args structs.RPCInfo) (*aclIdentity, error) {
	id, err := s.resolveToken(args.RequestToken())
	if err != nil {
		return nil, err
	}
	if id.unknown {
		return nil, structs.ErrTokenNotFound
	}
	return id, nil
}

// ownPolicies is the policy names a caller may read: all for
// management, else its token's (the anonymous policy for none).
func ownPolicies(id *aclIdentity) (all bool, names []string) {
	switch {
	case id.acl.IsManagement():
		return true, nil
	case id.claims != nil:
		return false, nil // a workload identity has no policies
	case id.token == nil:
		return false, []string{structs.AnonymousPolicyName}
	}
	return false, id.token.Policies
}

// GetPolicy returns one policy: to management, or to a token that has it.
func (a *ACL) GetPolicy(args *structs.ACLPolicySpecificRequest, reply *structs.SingleACLPolicyResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.GetPolicy", args, args, reply); done {
		return err
	}
	id, err := s.caller(args)
	if err != nil {
		return err
	}
	if all, names := ownPolicies(id); !all && !slices.Contains(names, args.Name) {
		return structs.ErrPermissionDenied
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		p, err := st.ACLPolicyByName(ws, args.Name)
		switch {
		case err == nil:
			reply.Policy = p
			return p.ModifyIndex, nil
		case errors.Is(err, structs.ErrNotFound):
			reply.Policy = nil
			return st.Index(state.TableACLPolicies)
		}
		return 0, err
	})
}

// ListPolicies lists policies (Prefix applies): all to management, a
// token's own to others.
func (a *ACL) ListPolicies(args *structs.ACLPolicyListRequest, reply *structs.ACLPolicyListResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.ListPolicies", args, args, reply); done {
		return err
	}
	id, err := s.caller(args)
	if err != nil {
		return err
	}
	all, names := ownPolicies(id)
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		ps, err := st.ACLPolicies(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Policies = make([]*structs.ACLPolicyListStub, 0, len(ps))
		for _, p := range ps {
			if all || slices.Contains(names, p.Name) {
				reply.Policies = append(reply.Policies, p.Stub())
			}
		}
		return st.Index(state.TableACLPolicies)
	})
}

// UpsertTokens creates tokens (no AccessorID) or updates them (name,
// type, policies; the secret never changes). Client tokens need at least
// one policy, management tokens take none, and every policy must exist.
// New tokens come back with their SecretID, the only time it is shown.
func (a *ACL) UpsertTokens(args *structs.ACLTokenUpsertRequest, reply *structs.ACLTokenUpsertResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.UpsertTokens", args, args, reply); done {
		return err
	}
	if len(args.Tokens) == 0 {
		return structs.NewError(structs.ErrCodeInvalid, "Must specify as least one token")
	}
	st := s.fsm.State()
	secrets := map[string]string{}
	now := time.Now().UTC()
	for i, in := range args.Tokens {
		if in == nil {
			return structs.NewError(structs.ErrCodeInvalid, "token %d is null", i)
		}
		tok := &structs.ACLToken{AccessorID: in.AccessorID, Name: in.Name, Type: in.Type,
			Policies: in.Policies, Global: in.Global, ExpirationTime: in.ExpirationTime}
		if err := validateToken(st, tok); err != nil {
			return err
		}
		if tok.AccessorID == "" {
			secret := structs.GenerateUUID()
			tok.AccessorID = structs.GenerateUUID()
			tok.SecretHash = structs.HashSecret(secret)
			tok.CreateTime = now
			if in.ExpirationTTL > 0 {
				tok.ExpirationTime = now.Add(in.ExpirationTTL)
			}
			if err := s.checkTokenExpiration(tok.ExpirationTime, now); err != nil {
				return err
			}
			secrets[tok.AccessorID] = secret
		} else {
			prev, err := st.ACLTokenByAccessor(nil, tok.AccessorID)
			if err != nil {
				return err
			}
			tok.SecretHash, tok.CreateTime, tok.Global = prev.SecretHash, prev.CreateTime, prev.Global
			if tok.ExpirationTime.IsZero() {
				tok.ExpirationTime = prev.ExpirationTime
			}
		}
		args.Tokens[i] = tok
	}
	index, _, err := s.raftApply(structs.ACLTokenUpsertRequestType, args)
	if err != nil {
		return err
	}
	st = s.fsm.State()
	for _, t := range args.Tokens {
		stored, err := st.ACLTokenByAccessor(nil, t.AccessorID)
		if err != nil {
			return err
		}
		out := *stored
		out.SecretID = secrets[t.AccessorID]
		reply.Tokens = append(reply.Tokens, &out)
	}
	reply.Index = index
	return nil
}

func validateToken(st *state.StateStore, t *structs.ACLToken) error {
	switch t.Type {
	case structs.ACLClientToken:
		if len(t.Policies) == 0 {
			return structs.NewError(structs.ErrCodeInvalid, "client token missing policies")
		}
	case structs.ACLManagementToken:
		if len(t.Policies) != 0 {
			return structs.NewError(structs.ErrCodeInvalid, "management token cannot be associated with policies")
		}
	default:
		return structs.NewError(structs.ErrCodeInvalid, "token type must be client or management")
	}
	if len(t.Name) > 256 {
		return structs.NewError(structs.ErrCodeInvalid, "token name too long")
	}
	for _, name := range t.Policies {
		if _, err := st.ACLPolicyByName(nil, name); err != nil {
			return structs.NewError(structs.ErrCodeInvalid, "cannot find policy %s", name)
		}
	}
	return nil
}

// DeleteTokens removes tokens by accessor.
func (a *ACL) DeleteTokens(args *structs.ACLTokenDeleteRequest, reply *structs.GenericResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.DeleteTokens", args, args, reply); done {
		return err
	}
	if len(args.AccessorIDs) == 0 {
		return structs.NewError(structs.ErrCodeInvalid, "Must specify as least one token")
	}
	index, _, err := s.raftApply(structs.ACLTokenDeleteRequestType, args)
	reply.Index = index
	return err
}

// GetToken returns one token by accessor, to management or to its own
// holder. Its secret is not shown: only its hash is stored.
func (a *ACL) GetToken(args *structs.ACLTokenSpecificRequest, reply *structs.SingleACLTokenResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.GetToken", args, args, reply); done {
		return err
	}
	id, err := s.caller(args)
	if err != nil {
		return err
	}
	if !id.acl.IsManagement() && (id.token == nil || id.token.AccessorID != args.AccessorID) {
		return structs.ErrPermissionDenied
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		t, err := st.ACLTokenByAccessor(ws, args.AccessorID)
		switch {
		case err == nil:
			reply.Token = t
			return t.ModifyIndex, nil
		case errors.Is(err, structs.ErrNotFound):
			reply.Token = nil
			return st.Index(state.TableACLTokens)
		}
		return 0, err
	})
}

// ListTokens lists tokens (Prefix on accessors), without secrets.
func (a *ACL) ListTokens(args *structs.ACLTokenListRequest, reply *structs.ACLTokenListResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.ListTokens", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		ts, err := st.ACLTokens(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Tokens = make([]*structs.ACLTokenListStub, 0, len(ts))
		for _, t := range ts {
			reply.Tokens = append(reply.Tokens, t.Stub())
		}
		return st.Index(state.TableACLTokens)
	})
}

// WhoAmI answers /v1/acl/token/self: the caller's token, with the secret
// the caller sent (it has it already); the anonymous token for none.
func (a *ACL) WhoAmI(args *structs.GenericRequest, reply *structs.SingleACLTokenResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.WhoAmI", args, args, reply); done {
		return err
	}
	id, err := s.caller(args)
	if err != nil {
		return err
	}
	switch {
	case id.internal, id.claims != nil:
		// The cluster secret and workload identities are no ACL tokens.
		return structs.ErrPermissionDenied
	case id.token == nil:
		reply.Token = anonymousToken()
	default:
		out := *id.token
		out.SecretID = args.AuthToken
		reply.Token = &out
	}
	reply.Index, _ = s.fsm.State().Index(state.TableACLTokens)
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}

// ResolveToken answers an agent that checks an HTTP-only endpoint itself
// (agent, metrics, client logs): whether the caller's token is a
// management token, and its policies.
func (a *ACL) ResolveToken(args *structs.GenericRequest, reply *structs.ACLResolveResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.ResolveToken", args, args, reply); done {
		return err
	}
	id, err := s.caller(args)
	if err != nil {
		return err
	}
	st := s.fsm.State()
	reply.Management = id.acl.IsManagement()
	if !reply.Management {
		_, names := ownPolicies(id)
		for _, name := range names {
			if p, err := st.ACLPolicyByName(nil, name); err == nil {
				reply.Policies = append(reply.Policies, p)
			}
		}
	}
	reply.Index, _ = st.Index(state.TableACLPolicies)
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}

// Nomad's bounds on a new token's lifetime.
const (
	DefaultACLTokenMinExpirationTTL = time.Minute
	DefaultACLTokenMaxExpirationTTL = 24 * time.Hour
)

// checkTokenExpiration refuses a new token's expiration (from its
// ExpirationTTL or ExpirationTime) that is closer than the minimum or
// further than the maximum lifetime; a token without one never expires.
func (s *Server) checkTokenExpiration(exp, now time.Time) error {
	if exp.IsZero() {
		return nil
	}
	lo, hi := s.config.ACLTokenMinExpirationTTL, s.config.ACLTokenMaxExpirationTTL
	if lo <= 0 {
		lo = DefaultACLTokenMinExpirationTTL
	}
	if hi <= 0 {
		hi = DefaultACLTokenMaxExpirationTTL
	}
	switch ttl := exp.Sub(now); {
	case ttl < lo:
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "ExpirationTTL",
			Message: fmt.Sprintf("expiration time cannot be less than %s in the future (token_min_expiration_ttl)", lo)}}}
	case ttl > hi:
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "ExpirationTTL",
			Message: fmt.Sprintf("expiration time cannot be more than %s in the future (token_max_expiration_ttl)", hi)}}}
	}
	return nil
}

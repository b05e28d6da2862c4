package agent

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/structs"
)

// Headers that carry the caller's ACL token, as in Nomad.
const headerToken = "X-Nomad-Token"

// requestSecret returns the request's ACL secret: X-Nomad-Token, else an
// "Authorization: Bearer" header; "" for none (the anonymous token).
func requestSecret(r *http.Request) string {
	if t := r.Header.Get(headerToken); t != "" {
		return t
	}
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}

// agentACLTTL is how long an agent keeps a token's resolved ACL for its
// own endpoints (agent, members, logs, pprof), like Nomad's client
// token_ttl default: a revoked token keeps these agent-local reads for
// at most this long. Every RPC is checked by the servers, uncached here.
const agentACLTTL = 30 * time.Second

type agentACLEntry struct {
	acl     *acl.ACL
	expires time.Time
}

// agentACLs caches resolved ACLs by the hash of their secret.
type agentACLs struct {
	mu      sync.Mutex
	entries map[[32]byte]agentACLEntry // guarded by mu
}

// authorize checks an agent-local endpoint: allow decides from the
// caller's ACL. With ACLs disabled it does nothing.
func (h *httpAPI) authorize(r *http.Request, allow func(*acl.ACL) bool) error {
	if !h.cfg.ACL.Enabled {
		return nil
	}
	a, err := h.resolveACL(requestSecret(r))
	if err != nil {
		return err
	}
	if !allow(a) {
		return structs.ErrPermissionDenied
	}
	return nil
}

// resolveACL asks the servers what a secret may do (ACL.ResolveToken),
// through the cache.
func (h *httpAPI) resolveACL(secret string) (*acl.ACL, error) {
	key := sha256.Sum256([]byte(secret))
	now := time.Now()
	h.acls.mu.Lock()
	if e, ok := h.acls.entries[key]; ok && now.Before(e.expires) {
		h.acls.mu.Unlock()
		return e.acl, nil
	}
	h.acls.mu.Unlock()
	var resp structs.ACLResolveResponse
	args := structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: h.cfg.Region, AllowStale: true, AuthToken: secret}}
	if err := h.srv.RPC("ACL.ResolveToken", &args, &resp); err != nil {
		return nil, err
	}
	var parsed []*acl.Policy
	for _, p := range resp.Policies {
		if pp, err := acl.Parse(p.Name, p.Rules); err == nil {
			parsed = append(parsed, pp)
		}
	}
	a := acl.New(resp.Management, parsed)
	h.acls.mu.Lock()
	if h.acls.entries == nil || len(h.acls.entries) > 1024 {
		h.acls.entries = map[[32]byte]agentACLEntry{}
	}
	h.acls.entries[key] = agentACLEntry{acl: a, expires: now.Add(agentACLTTL)}
	h.acls.mu.Unlock()
	return a, nil
}

// registerACL mounts the ACL endpoints.
func (h *httpAPI) registerACL(handle func(string, handlerFunc)) {
	for _, m := range []string{"PUT", "POST"} {
		handle(m+" /v1/acl/bootstrap", h.aclBootstrap)
		handle(m+" /v1/acl/policy/{name}", h.aclPolicyPut)
		handle(m+" /v1/acl/token", h.aclTokenCreate)
		handle(m+" /v1/acl/token/{accessor}", h.aclTokenUpdate)
		handle(m+" /v1/acl/cluster-secret/rotate", h.aclRotateClusterSecret)
	}
	handle("GET /v1/acl/policies", h.aclPolicyList)
	handle("GET /v1/acl/policy/{name}", h.aclPolicyGet)
	handle("DELETE /v1/acl/policy/{name}", h.aclPolicyDelete)
	handle("GET /v1/acl/tokens", h.aclTokenList)
	handle("GET /v1/acl/token/self", h.aclTokenSelf)
	handle("GET /v1/acl/token/{accessor}", h.aclTokenGet)
	handle("DELETE /v1/acl/token/{accessor}", h.aclTokenDelete)
}

// PUT|POST /v1/acl/bootstrap: the first management token, with its
// secret. Body (optional): {"BootstrapSecret": ""}; choosing the secret
// is not supported.
func (h *httpAPI) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct{ BootstrapSecret string }
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &body); err != nil && r.ContentLength > 0 {
			return nil, err
		}
	}
	if body.BootstrapSecret != "" {
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support choosing the bootstrap secret (BootstrapSecret)")
	}
	var args structs.ACLTokenBootstrapRequest
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.ACLTokenUpsertResponse
	if err := h.srv.RPC("ACL.Bootstrap", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out.Tokens[0], nil
}

// GET /v1/acl/policies
func (h *httpAPI) aclPolicyList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.ACLPolicyListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.ACLPolicyListResponse
	if err := h.srv.RPC("ACL.ListPolicies", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.Policies, nil
}

// GET /v1/acl/policy/<name>
func (h *httpAPI) aclPolicyGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ACLPolicySpecificRequest{Name: r.PathValue("name")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleACLPolicyResponse
	if err := h.srv.RPC("ACL.GetPolicy", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Policy == nil {
		return nil, notFound("ACL policy not found")
	}
	return out.Policy, nil
}

// PUT|POST /v1/acl/policy/<name>: body api.ACLPolicy.
func (h *httpAPI) aclPolicyPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct {
		Name        string
		Description string
		Rules       string
		JobACL      any
	}
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if body.Name != "" && body.Name != name {
		return nil, badRequest("Policy name %q does not match the URL's %q", body.Name, name)
	}
	if body.JobACL != nil {
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support job ACLs (JobACL: policies attached to a job's workload identity)")
	}
	args := structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: name, Description: body.Description, Rules: body.Rules}}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("ACL.UpsertPolicies", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// DELETE /v1/acl/policy/<name>
func (h *httpAPI) aclPolicyDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ACLPolicyDeleteRequest{Names: []string{r.PathValue("name")}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("ACL.DeletePolicies", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// aclTokenBody is the token fields a create or update reads (api.ACLToken).
type aclTokenBody struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Roles          []any
	Global         bool
	ExpirationTime *time.Time
	ExpirationTTL  jsonDuration
}

// jsonDuration reads a duration as Nomad's client sends it: a string
// ("1h0m0s", "" for none) or nanoseconds.
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q", s)
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration must be a string such as \"1h\" or nanoseconds")
	}
	*d = jsonDuration(n)
	return nil
}

func (h *httpAPI) aclTokenWrite(w http.ResponseWriter, r *http.Request, accessor string) (any, error) {
	var body aclTokenBody
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	if len(body.Roles) > 0 {
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support ACL roles")
	}
	if accessor != "" && body.AccessorID != "" && body.AccessorID != accessor {
		return nil, badRequest("Token accessor ID %q does not match the URL's %q", body.AccessorID, accessor)
	}
	if accessor == "" && body.AccessorID != "" {
		return nil, badRequest("A new token must not name an AccessorID")
	}
	tok := &structs.ACLToken{AccessorID: accessor, Name: body.Name, Type: body.Type, Policies: body.Policies,
		Global: body.Global, ExpirationTTL: time.Duration(body.ExpirationTTL)}
	if body.ExpirationTime != nil {
		tok.ExpirationTime = *body.ExpirationTime
	}
	args := structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.ACLTokenUpsertResponse
	if err := h.srv.RPC("ACL.UpsertTokens", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out.Tokens[0], nil
}

// PUT|POST /v1/acl/token: create; the answer is the only time the
// secret is shown.
func (h *httpAPI) aclTokenCreate(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.aclTokenWrite(w, r, "")
}

// PUT|POST /v1/acl/token/<accessor>: update name, type and policies.
func (h *httpAPI) aclTokenUpdate(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.aclTokenWrite(w, r, r.PathValue("accessor"))
}

// GET /v1/acl/tokens
func (h *httpAPI) aclTokenList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.ACLTokenListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.ACLTokenListResponse
	if err := h.srv.RPC("ACL.ListTokens", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.Tokens, nil
}

// GET /v1/acl/token/<accessor>: without its secret (only a hash is kept).
func (h *httpAPI) aclTokenGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ACLTokenSpecificRequest{AccessorID: r.PathValue("accessor")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleACLTokenResponse
	if err := h.srv.RPC("ACL.GetToken", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Token == nil {
		return nil, notFound("ACL token not found")
	}
	return out.Token, nil
}

// GET /v1/acl/token/self: the caller's token, with the secret it sent.
func (h *httpAPI) aclTokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleACLTokenResponse
	if err := h.srv.RPC("ACL.WhoAmI", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.Token, nil
}

// DELETE /v1/acl/token/<accessor>
func (h *httpAPI) aclTokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ACLTokenDeleteRequest{AccessorIDs: []string{r.PathValue("accessor")}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("ACL.DeleteTokens", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// debugWithACL serves the pprof handlers (enable_debug) to agent write
// tokens only, as Nomad's /v1/agent/pprof/ with ACLs on.
func (h *httpAPI) debugWithACL() http.Handler {
	sub := http.NewServeMux()
	registerDebug(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.authorize(r, (*acl.ACL).AllowAgentWrite); err != nil {
			code, msg := errorResponse(err)
			http.Error(w, msg, code)
			return
		}
		sub.ServeHTTP(w, r)
	})
}

// PUT|POST /v1/acl/cluster-secret/rotate (Drover's own): replace the
// servers' internal credential; the old one is accepted for a minute
// more. Management tokens only. Answers {"Index": N}.
func (h *httpAPI) aclRotateClusterSecret(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.ACLClusterSecretRotateRequest
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("ACL.RotateClusterSecret", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return map[string]uint64{"Index": out.Index}, nil
}

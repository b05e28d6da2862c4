package server

import (
	"crypto/subtle"
	"sync"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// aclIdentity is what a request's secret resolves to on this server.
type aclIdentity struct {
	acl *acl.ACL
	// token is the resolved token; nil for the anonymous token, the
	// cluster secret and an unknown secret.
	token *structs.ACLToken
	// internal: the secret is the cluster secret (a server).
	internal bool
	// unknown: a non-empty secret that matches no token (it may be a
	// node's SecretID, which the node-secret check judges).
	unknown bool
	// claims are set for a workload identity (workload_identity.go).
	claims *structs.WorkloadIdentityClaims
}

// aclCacheMax bounds the resolution cache; when full it starts over.
const aclCacheMax = 4096

// aclCache caches resolutions per secret hash. It is valid for one state
// store and one pair of (policies, tokens) table indexes: any write to
// either table, or a restore, empties it. Expiry is checked per lookup.
type aclCache struct {
	mu       sync.Mutex
	store    *state.StateStore         // guarded by mu
	policies uint64                    // guarded by mu
	tokens   uint64                    // guarded by mu
	entries  map[[32]byte]*aclIdentity // guarded by mu
	expires  map[[32]byte]time.Time    // guarded by mu: entries of tokens with an expiry
	anon     *aclIdentity              // guarded by mu
	secret   *structs.ACLClusterSecret // guarded by mu
}

// resolveToken resolves a request's secret on this server's own state.
// The empty secret is the anonymous token.
func (s *Server) resolveToken(secret string) (*aclIdentity, error) {
	if looksLikeJWT(secret) {
		// Not cached: its allocation's state decides, on every call.
		return s.resolveWorkloadIdentity(secret)
	}
	st := s.fsm.State()
	pIdx, err := st.Index(state.TableACLPolicies)
	if err != nil {
		return nil, err
	}
	tIdx, err := st.Index(state.TableACLTokens)
	if err != nil {
		return nil, err
	}
	c := &s.aclCache
	c.mu.Lock()
	if c.store != st || c.policies != pIdx || c.tokens != tIdx {
		c.store, c.policies, c.tokens = st, pIdx, tIdx
		c.entries, c.expires, c.anon, c.secret = nil, nil, nil, nil
	}
	if c.secret == nil {
		// Written once per cluster; read until it exists.
		c.secret, _ = st.ACLClusterSecret()
	}
	if secret == "" {
		id := c.anon
		c.mu.Unlock()
		if id != nil {
			return id, nil
		}
		id, err := s.buildAnonymous(st)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.anon = id
		c.mu.Unlock()
		return id, nil
	}
	if c.secret != nil && subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret.Secret)) == 1 {
		c.mu.Unlock()
		return internalIdentity, nil
	}
	hash := [32]byte(structs.HashSecret(secret))
	id, ok := c.entries[hash]
	if ok {
		exp, expiring := c.expires[hash]
		c.mu.Unlock()
		if expiring && time.Now().After(exp) {
			return nil, structs.NewError(structs.ErrCodeTokenNotFound, "ACL token expired")
		}
		return id, nil
	}
	c.mu.Unlock()

	id, err = s.buildIdentity(st, hash[:])
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.store == st && c.policies == pIdx && c.tokens == tIdx {
		if len(c.entries) >= aclCacheMax {
			c.entries, c.expires = nil, nil
		}
		if c.entries == nil {
			c.entries = map[[32]byte]*aclIdentity{}
		}
		c.entries[hash] = id
		if id.token != nil && !id.token.ExpirationTime.IsZero() {
			if c.expires == nil {
				c.expires = map[[32]byte]time.Time{}
			}
			c.expires[hash] = id.token.ExpirationTime
		}
	}
	c.mu.Unlock()
	if id.token != nil && id.token.IsExpired(time.Now()) {
		return nil, structs.NewError(structs.ErrCodeTokenNotFound, "ACL token expired")
	}
	return id, nil
}

var internalIdentity = &aclIdentity{acl: acl.ManagementACL, internal: true}

// buildIdentity looks a secret's hash up and compiles its policies.
func (s *Server) buildIdentity(st *state.StateStore, hash []byte) (*aclIdentity, error) {
	tok, err := st.ACLTokenBySecretHash(hash)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return &aclIdentity{acl: acl.DenyAll, unknown: true}, nil
	}
	a, err := s.compilePolicies(st, tok.IsManagement(), tok.Policies)
	if err != nil {
		return nil, err
	}
	return &aclIdentity{acl: a, token: tok}, nil
}

// buildAnonymous compiles the anonymous token: the policy named
// "anonymous" if it exists, else nothing.
func (s *Server) buildAnonymous(st *state.StateStore) (*aclIdentity, error) {
	a, err := s.compilePolicies(st, false, []string{structs.AnonymousPolicyName})
	if err != nil {
		return nil, err
	}
	return &aclIdentity{acl: a}, nil
}

// compilePolicies merges the named policies; a name with no policy (it
// was deleted) grants nothing, as in Nomad.
func (s *Server) compilePolicies(st *state.StateStore, management bool, names []string) (*acl.ACL, error) {
	if management {
		return acl.ManagementACL, nil
	}
	var parsed []*acl.Policy
	for _, name := range names {
		p, err := st.ACLPolicyByName(nil, name)
		if structs.CodeOf(err) == structs.ErrCodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		pp, err := acl.Parse(p.Name, p.Rules)
		if err != nil {
			// Stored policies were parsed when written; a policy a newer
			// server accepted and this one cannot read grants nothing.
			s.logger.Warn("stored ACL policy does not parse; ignoring it", "policy", p.Name, "error", err)
			continue
		}
		parsed = append(parsed, pp)
	}
	return acl.New(false, parsed), nil
}

// clusterSecret returns the servers' internal credential, "" until the
// leader has written one (or with ACLs disabled).
func (s *Server) clusterSecret() string {
	if !s.config.ACLEnabled {
		return ""
	}
	c := &s.aclCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := s.fsm.State(); c.secret == nil || c.store != st {
		secret, _ := st.ACLClusterSecret()
		if c.store == st {
			c.secret = secret
		}
		if secret == nil {
			return ""
		}
		return secret.Secret
	}
	if c.secret == nil {
		return ""
	}
	return c.secret.Secret
}

// internalWrite is the WriteRequest of a scheduler-internal call to the
// leader: it carries the cluster secret (empty with ACLs disabled).
func (s *Server) internalWrite() structs.WriteRequest {
	return structs.WriteRequest{AuthToken: s.clusterSecret()}
}

// aclHook makes sure, on a leader with ACLs enabled, that the cluster has
// its internal credential: the first leader writes a random one through
// Raft; every server reads it from its state.
type aclHook struct{}

func (aclHook) Name() string { return "acl_cluster_secret" }

func (aclHook) Establish(s *Server) error {
	if !s.config.ACLEnabled {
		return nil
	}
	if c, err := s.fsm.State().ACLClusterSecret(); err != nil || c != nil {
		return err
	}
	req := &structs.ACLClusterSecretRequest{Secret: &structs.ACLClusterSecret{Secret: structs.GenerateUUID()}}
	if _, _, err := s.raftApply(structs.ACLClusterSecretRequestType, req); err != nil {
		// Followers' workers are refused until a leader writes it; the
		// leader's own workers call in-process and need none.
		s.logger.Error("failed to write the ACL cluster secret", "error", err)
	}
	return nil
}

func (aclHook) Revoke(*Server) error { return nil }

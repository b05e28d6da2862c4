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
}

// clusterSecretCache is the cluster secret as last read from one state
// store at one index of its table (a rotation moves the index).
type clusterSecretCache struct {
	store  *state.StateStore
	index  uint64
	secret *structs.ACLClusterSecret // nil: none written yet
}

// currentClusterSecret returns the stored cluster secret (nil before the
// leader writes one), read again only when its table changed.
func (s *Server) currentClusterSecret() *structs.ACLClusterSecret {
	st := s.fsm.State()
	idx, _ := st.Index(state.TableACLCluster)
	if c := s.clusterSecretCache.Load(); c != nil && c.store == st && c.index == idx && c.secret != nil {
		return c.secret
	}
	secret, _ := st.ACLClusterSecret()
	s.clusterSecretCache.Store(&clusterSecretCache{store: st, index: idx, secret: secret})
	return secret
}

// isClusterSecret reports whether secret is the cluster secret, or the
// one a rotation replaced while it is still accepted.
func isClusterSecret(c *structs.ACLClusterSecret, secret string, now time.Time) bool {
	if c == nil {
		return false
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) == 1 {
		return true
	}
	return c.Previous != "" && now.UnixNano() < c.PreviousUntil &&
		subtle.ConstantTimeCompare([]byte(secret), []byte(c.Previous)) == 1
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
		c.entries, c.expires, c.anon = nil, nil, nil
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
	c.mu.Unlock()
	if isClusterSecret(s.currentClusterSecret(), secret, time.Now()) {
		return internalIdentity, nil
	}
	c.mu.Lock()
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
	if c := s.currentClusterSecret(); c != nil {
		return c.Secret
	}
	return ""
}

// clusterSecretGrace is how long the secret a rotation replaced is still
// accepted: calls already made with it, and servers that have not yet
// applied the rotation, keep working.
const clusterSecretGrace = time.Minute

// RotateClusterSecret replaces the servers' internal credential (the
// cluster secret) with a new random one through Raft; the old one is
// accepted for clusterSecretGrace more (Config.ACLClusterSecretGrace in
// tests). Management tokens only.
func (a *ACL) RotateClusterSecret(args *structs.ACLClusterSecretRotateRequest, reply *structs.GenericResponse) error {
	s := a.srv
	if !s.config.ACLEnabled {
		return errACLDisabled
	}
	if done, err := s.forward("ACL.RotateClusterSecret", args, args, reply); done {
		return err
	}
	grace := s.config.ACLClusterSecretGrace
	if grace <= 0 {
		grace = clusterSecretGrace
	}
	req := &structs.ACLClusterSecretRequest{Rotate: true, Secret: &structs.ACLClusterSecret{
		Secret: structs.GenerateUUID(), PreviousUntil: time.Now().Add(grace).UnixNano()}}
	index, _, err := s.raftApply(structs.ACLClusterSecretRequestType, req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
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

package structs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// ACL token types, Nomad's names.
const (
	ACLClientToken     = "client"
	ACLManagementToken = "management"
)

// AnonymousAccessorID is the accessor of the token a request without a
// secret acts as; its policy is the one named AnonymousPolicyName, if
// that policy exists.
const (
	AnonymousAccessorID = "anonymous"
	AnonymousPolicyName = "anonymous"
)

// MaxACLPolicyNameLength bounds a policy name (Nomad's limit).
const MaxACLPolicyNameLength = 128

// ACLPolicy is a named policy document (Nomad's api.ACLPolicy shape).
// Rules is kept as written; it is parsed (acl.Parse) when the policy is
// written and again when a token using it is resolved.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	CreateIndex uint64
	ModifyIndex uint64
}

// Stub returns the list form of the policy.
func (p *ACLPolicy) Stub() *ACLPolicyListStub {
	return &ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

// ACLPolicyListStub is a policy in a list (api.ACLPolicyListStub).
type ACLPolicyListStub struct {
	Name        string
	Description string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLToken is an ACL token. The state store and snapshots hold only the
// SHA-256 of its secret (SecretHash); SecretID is set only in the answer
// that creates the token (and in /v1/acl/token/self, which echoes the
// caller's own secret). JSON shape: Nomad's api.ACLToken.
type ACLToken struct {
	AccessorID string
	SecretID   string `codec:",omitempty"`
	SecretHash []byte `json:"-" codec:"SecretHash"` // hidden from JSON, stored and replicated
	Name       string
	Type       string
	Policies   []string
	Global     bool
	CreateTime time.Time
	// ExpirationTime is zero for a token that never expires (JSON: absent,
	// as Nomad's *time.Time; see MarshalJSON).
	ExpirationTime time.Time `codec:",omitempty"`
	// ExpirationTTL is read on create only (ExpirationTime = now + TTL).
	ExpirationTTL time.Duration `json:"-" codec:"ExpirationTTL"`
	CreateIndex   uint64
	ModifyIndex   uint64
}

// HashSecret returns the SHA-256 of a secret, the form in which token
// secrets are stored and looked up.
func HashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// SecretKey is the state store's index key of a secret hash.
func SecretKey(hash []byte) string { return hex.EncodeToString(hash) }

// IsManagement reports whether the token is a management token.
func (t *ACLToken) IsManagement() bool { return t.Type == ACLManagementToken }

// IsExpired reports whether the token has expired at now.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return !t.ExpirationTime.IsZero() && now.After(t.ExpirationTime)
}

// Stub returns the list form of the token.
func (t *ACLToken) Stub() *ACLTokenListStub {
	return &ACLTokenListStub{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type, Policies: t.Policies,
		Global: t.Global, CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime,
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
}

// ACLTokenListStub is a token in a list (api.ACLTokenListStub): no secret.
type ACLTokenListStub struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Global         bool
	CreateTime     time.Time
	ExpirationTime time.Time `codec:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// expiry is a token's ExpirationTime in Nomad's JSON form: nil when the
// token never expires.
func expiry(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// MarshalJSON writes the token in Nomad's shape (no ExpirationTime for a
// token that never expires).
func (t *ACLToken) MarshalJSON() ([]byte, error) {
	type plain ACLToken
	return json.Marshal(struct {
		*plain
		ExpirationTime *time.Time `json:",omitempty"`
	}{(*plain)(t), expiry(t.ExpirationTime)})
}

// MarshalJSON writes the stub in Nomad's shape (see ACLToken.MarshalJSON).
func (t *ACLTokenListStub) MarshalJSON() ([]byte, error) {
	type plain ACLTokenListStub
	return json.Marshal(struct {
		*plain
		ExpirationTime *time.Time `json:",omitempty"`
	}{(*plain)(t), expiry(t.ExpirationTime)})
}

// ACLClusterSecret is the servers' internal credential: a random secret
// the leader writes through Raft once ACLs are enabled, which servers
// send with the scheduler-internal RPCs (Eval.Dequeue, Plan.Submit...).
// It is in the state store and snapshots, never in an API answer.
type ACLClusterSecret struct {
	Secret string
	// Previous is the secret a rotation replaced, still accepted until
	// PreviousUntil (Unix nanoseconds) so that calls already on their way
	// succeed; "" when there was no rotation.
	Previous      string `codec:",omitempty"`
	PreviousUntil int64  `codec:",omitempty"`
	CreateIndex   uint64
	ModifyIndex   uint64 `codec:",omitempty"`
}

// ACLPolicyUpsertRequest writes policies (RPC ACL.UpsertPolicies).
type ACLPolicyUpsertRequest struct {
	Policies []*ACLPolicy
	WriteRequest
}

// ACLPolicyDeleteRequest deletes policies by name.
type ACLPolicyDeleteRequest struct {
	Names []string
	WriteRequest
}

// ACLPolicySpecificRequest reads one policy.
type ACLPolicySpecificRequest struct {
	Name string
	QueryOptions
}

// SingleACLPolicyResponse answers ACLPolicySpecificRequest.
type SingleACLPolicyResponse struct {
	Policy *ACLPolicy
	QueryMeta
}

// ACLPolicyListRequest lists policies (QueryOptions.Prefix applies).
type ACLPolicyListRequest struct {
	QueryOptions
}

// ACLPolicyListResponse answers ACLPolicyListRequest.
type ACLPolicyListResponse struct {
	Policies []*ACLPolicyListStub
	QueryMeta
}

// ACLTokenUpsertRequest creates or updates tokens. The server fills
// AccessorID, SecretHash and CreateTime of new tokens; the FSM stores
// what the entry carries, never a secret.
type ACLTokenUpsertRequest struct {
	Tokens []*ACLToken
	WriteRequest
}

// ACLTokenUpsertResponse answers ACLTokenUpsertRequest with the tokens
// written, new ones with their SecretID.
type ACLTokenUpsertResponse struct {
	Tokens []*ACLToken
	WriteMeta
}

// ACLTokenBootstrapRequest creates the first management token. ResetIndex
// is the index of the bootstrap entry it must follow (0: none yet).
type ACLTokenBootstrapRequest struct {
	Token      *ACLToken
	ResetIndex uint64
	WriteRequest
}

// ACLTokenDeleteRequest deletes tokens by accessor.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
	WriteRequest
}

// ACLTokenSpecificRequest reads one token by accessor.
type ACLTokenSpecificRequest struct {
	AccessorID string
	QueryOptions
}

// SingleACLTokenResponse answers ACLTokenSpecificRequest and ACL.WhoAmI.
type SingleACLTokenResponse struct {
	Token *ACLToken
	QueryMeta
}

// ACLTokenListRequest lists tokens (QueryOptions.Prefix on accessors).
type ACLTokenListRequest struct {
	QueryOptions
}

// ACLTokenListResponse answers ACLTokenListRequest.
type ACLTokenListResponse struct {
	Tokens []*ACLTokenListStub
	QueryMeta
}

// ACLResolveResponse answers ACL.ResolveToken: what an agent needs to
// check a request itself (its HTTP-only endpoints): whether the token is
// a management token and the rules of its policies.
type ACLResolveResponse struct {
	Management bool
	Policies   []*ACLPolicy
	QueryMeta
}

// ACLClusterSecretRotateRequest asks for a new cluster secret (RPC
// ACL.RotateClusterSecret).
type ACLClusterSecretRotateRequest struct {
	WriteRequest
}

// ACLClusterSecretRequest writes the cluster secret (leader only).
type ACLClusterSecretRequest struct {
	Secret *ACLClusterSecret
	// Rotate replaces the stored secret with Secret.Secret, keeping the
	// old one as Previous until Secret.PreviousUntil; without it the entry
	// writes the first secret only (a no-op once one exists).
	Rotate bool `codec:",omitempty"`
	WriteRequest
}

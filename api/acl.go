package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/drover-project/drover/structs"
)

// ACLBootstrap creates the first management token; the answer carries
// its secret, shown this once.
func (c *Client) ACLBootstrap(ctx context.Context) (*structs.ACLToken, error) {
	var out structs.ACLToken
	if _, err := c.write(ctx, http.MethodPost, "/v1/acl/bootstrap", nil, nil, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ACLPolicies lists the policies the token may see.
func (c *Client) ACLPolicies(ctx context.Context, q *QueryOptions) ([]*structs.ACLPolicyListStub, *QueryMeta, error) {
	var out []*structs.ACLPolicyListStub
	qm, err := c.query(ctx, "/v1/acl/policies", q, &out)
	return out, qm, err
}

// ACLPolicy returns one policy.
func (c *Client) ACLPolicy(ctx context.Context, name string, q *QueryOptions) (*structs.ACLPolicy, *QueryMeta, error) {
	var out structs.ACLPolicy
	qm, err := c.query(ctx, "/v1/acl/policy/"+url.PathEscape(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// ACLPolicyUpsert writes a policy.
func (c *Client) ACLPolicyUpsert(ctx context.Context, p *structs.ACLPolicy) error {
	_, err := c.write(ctx, http.MethodPut, "/v1/acl/policy/"+url.PathEscape(p.Name), nil, nil, p, nil)
	return err
}

// ACLPolicyDelete removes a policy.
func (c *Client) ACLPolicyDelete(ctx context.Context, name string) error {
	_, err := c.write(ctx, http.MethodDelete, "/v1/acl/policy/"+url.PathEscape(name), nil, nil, nil, nil)
	return err
}

// ACLTokenRequest is the body of a token create or update.
type ACLTokenRequest struct {
	Name          string
	Type          string
	Policies      []string
	Global        bool
	ExpirationTTL string `json:",omitempty"`
}

// ACLTokenCreate creates a token; the answer carries its secret, shown
// this once.
func (c *Client) ACLTokenCreate(ctx context.Context, t *ACLTokenRequest) (*structs.ACLToken, error) {
	var out structs.ACLToken
	if _, err := c.write(ctx, http.MethodPost, "/v1/acl/token", nil, nil, t, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ACLTokenUpdate updates a token's name, type and policies.
func (c *Client) ACLTokenUpdate(ctx context.Context, accessor string, t *ACLTokenRequest) (*structs.ACLToken, error) {
	var out structs.ACLToken
	if _, err := c.write(ctx, http.MethodPost, "/v1/acl/token/"+url.PathEscape(accessor), nil, nil, t, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ACLTokens lists the tokens (management only).
func (c *Client) ACLTokens(ctx context.Context, q *QueryOptions) ([]*structs.ACLTokenListStub, *QueryMeta, error) {
	var out []*structs.ACLTokenListStub
	qm, err := c.query(ctx, "/v1/acl/tokens", q, &out)
	return out, qm, err
}

// ACLToken returns a token by accessor (without its secret).
func (c *Client) ACLToken(ctx context.Context, accessor string, q *QueryOptions) (*structs.ACLToken, *QueryMeta, error) {
	var out structs.ACLToken
	qm, err := c.query(ctx, "/v1/acl/token/"+url.PathEscape(accessor), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// ACLTokenSelf returns the client's own token.
func (c *Client) ACLTokenSelf(ctx context.Context) (*structs.ACLToken, error) {
	var out structs.ACLToken
	if _, err := c.query(ctx, "/v1/acl/token/self", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ACLTokenDelete removes a token.
func (c *Client) ACLTokenDelete(ctx context.Context, accessor string) error {
	_, err := c.write(ctx, http.MethodDelete, "/v1/acl/token/"+url.PathEscape(accessor), nil, nil, nil, nil)
	return err
}

// ACLRotateClusterSecret replaces the servers' internal credential
// (Drover's own endpoint) and returns the Raft index of the change.
func (c *Client) ACLRotateClusterSecret(ctx context.Context, w *WriteOptions) (uint64, error) {
	var out struct{ Index uint64 }
	if _, err := c.write(ctx, http.MethodPost, "/v1/acl/cluster-secret/rotate", nil, w, struct{}{}, &out); err != nil {
		return 0, err
	}
	return out.Index, nil
}

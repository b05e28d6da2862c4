package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/drover-project/drover/structs"
)

// NodePools lists the node pools (q.Prefix filters by name).
func (c *Client) NodePools(ctx context.Context, q *QueryOptions) ([]*structs.NodePool, *QueryMeta, error) {
	var out []*structs.NodePool
	qm, err := c.query(ctx, "/v1/node/pools", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// NodePool returns one pool; a missing one is a 404 *StatusError.
func (c *Client) NodePool(ctx context.Context, name string, q *QueryOptions) (*structs.NodePool, *QueryMeta, error) {
	var out structs.NodePool
	qm, err := c.query(ctx, "/v1/node/pool/"+url.PathEscape(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// RegisterNodePool creates or replaces a pool.
func (c *Client) RegisterNodePool(ctx context.Context, pool *structs.NodePool, w *WriteOptions) (*WriteMeta, error) {
	return c.write(ctx, http.MethodPut, "/v1/node/pools", nil, w, pool, nil)
}

// DeleteNodePool deletes a pool.
func (c *Client) DeleteNodePool(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return c.write(ctx, http.MethodDelete, "/v1/node/pool/"+url.PathEscape(name), nil, w, nil, nil)
}

// NodePoolNodes lists a pool's nodes.
func (c *Client) NodePoolNodes(ctx context.Context, name string, q *QueryOptions) ([]*structs.NodeListStub, *QueryMeta, error) {
	var out []*structs.NodeListStub
	qm, err := c.query(ctx, "/v1/node/pool/"+url.PathEscape(name)+"/nodes", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// NodePoolJobs lists a pool's jobs (q.Namespace; "*" for all).
func (c *Client) NodePoolJobs(ctx context.Context, name string, q *QueryOptions) ([]*structs.JobListStub, *QueryMeta, error) {
	var out []*structs.JobListStub
	qm, err := c.query(ctx, "/v1/node/pool/"+url.PathEscape(name)+"/jobs", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

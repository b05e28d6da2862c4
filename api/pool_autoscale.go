package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/drover-project/drover/structs"
)

// PoolAutoscalerInfo is a pool's autoscaler configuration (nil: none) and
// status (events, quota back-off; nil: nothing recorded).
type PoolAutoscalerInfo struct {
	Autoscaler *structs.PoolAutoscaler
	Status     *structs.PoolAutoscaleStatus
}

// PoolAutoscaler returns a pool's autoscaler; a pool without one is a 404
// *StatusError.
func (c *Client) PoolAutoscaler(ctx context.Context, pool string, q *QueryOptions) (*PoolAutoscalerInfo, *QueryMeta, error) {
	var out PoolAutoscalerInfo
	qm, err := c.query(ctx, "/v1/node/pool/"+url.PathEscape(pool)+"/autoscaler", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// SetPoolAutoscaler sets the autoscaler of a.Pool.
func (c *Client) SetPoolAutoscaler(ctx context.Context, a *structs.PoolAutoscaler, w *WriteOptions) (*WriteMeta, error) {
	return c.write(ctx, http.MethodPut, "/v1/node/pool/"+url.PathEscape(a.Pool)+"/autoscaler", nil, w, a, nil)
}

// DeletePoolAutoscaler deletes a pool's autoscaler (its instances stay).
func (c *Client) DeletePoolAutoscaler(ctx context.Context, pool string, w *WriteOptions) (*WriteMeta, error) {
	return c.write(ctx, http.MethodDelete, "/v1/node/pool/"+url.PathEscape(pool)+"/autoscaler", nil, w, nil, nil)
}

// PoolInstances lists a pool's autoscaled instances ("all": every pool's).
func (c *Client) PoolInstances(ctx context.Context, pool string, q *QueryOptions) ([]*structs.PoolInstance, *QueryMeta, error) {
	var out []*structs.PoolInstance
	qm, err := c.query(ctx, "/v1/node/pool/"+url.PathEscape(pool)+"/instances", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// SetPoolInstanceBehavior sets an instance's behaviour: run, hold or
// drain (pool "all": whatever its pool).
func (c *Client) SetPoolInstanceBehavior(ctx context.Context, pool, id, behavior string, w *WriteOptions) (*WriteMeta, error) {
	body := struct{ Behavior string }{behavior}
	return c.write(ctx, http.MethodPut, "/v1/node/pool/"+url.PathEscape(pool)+"/instance/"+url.PathEscape(id), nil, w, body, nil)
}

package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

// Allocations lists allocation stubs (q.Prefix filters by ID prefix).
func (c *Client) Allocations(ctx context.Context, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	qm, err := c.query(ctx, "/v1/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Allocation returns one allocation with its job; a missing one is a 404
// *StatusError.
func (c *Client) Allocation(ctx context.Context, id string, q *QueryOptions) (*structs.Allocation, *QueryMeta, error) {
	var out structs.Allocation
	qm, err := c.query(ctx, "/v1/allocation/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// StopAllocation stops one allocation; its job's scheduler replaces it.
func (c *Client) StopAllocation(ctx context.Context, id string, w *WriteOptions) (*structs.AllocStopResponse, *WriteMeta, error) {
	var out structs.AllocStopResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/allocation/"+url.PathEscape(id)+"/stop", nil, w, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Evals lists evaluations (q.Prefix by ID prefix; q.Params "job" and
// "status" filter by job ID and status).
func (c *Client) Evals(ctx context.Context, q *QueryOptions) ([]*structs.Evaluation, *QueryMeta, error) {
	var out []*structs.Evaluation
	qm, err := c.query(ctx, "/v1/evaluations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// EvalAllocations lists the stubs of the allocations an evaluation placed
// or changed.
func (c *Client) EvalAllocations(ctx context.Context, id string, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	qm, err := c.query(ctx, "/v1/evaluation/"+url.PathEscape(id)+"/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// GarbageCollect runs the cluster's garbage collection now.
func (c *Client) GarbageCollect(ctx context.Context) error {
	_, err := c.write(ctx, http.MethodPut, "/v1/system/gc", nil, nil, struct{}{}, nil)
	return err
}

// AllocStats returns an allocation's resource usage, from the client
// running it (any agent passes the request on).
func (c *Client) AllocStats(ctx context.Context, id string, q *QueryOptions) (*driver.AllocResourceUsage, error) {
	var out driver.AllocResourceUsage
	if _, err := c.query(ctx, "/v1/client/allocation/"+url.PathEscape(id)+"/stats", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

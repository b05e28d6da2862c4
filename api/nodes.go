package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/drover-project/drover/structs"
)

// NodeAllocations lists the allocations on a node, in full.
func (c *Client) NodeAllocations(ctx context.Context, id string, q *QueryOptions) ([]*structs.Allocation, *QueryMeta, error) {
	var out []*structs.Allocation
	qm, err := c.query(ctx, "/v1/node/"+url.PathEscape(id)+"/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// DrainNode starts a drain (spec not nil) or ends one (spec nil; then
// markEligible makes the node eligible again).
func (c *Client) DrainNode(ctx context.Context, id string, spec *structs.DrainSpec, markEligible bool, w *WriteOptions) (*structs.NodeUpdateHTTPResponse, *WriteMeta, error) {
	req := &structs.NodeDrainHTTPRequest{NodeID: id, DrainSpec: spec, MarkEligible: markEligible}
	var out structs.NodeUpdateHTTPResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/node/"+url.PathEscape(id)+"/drain", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// SetNodeEligibility makes a node eligible or ineligible for new work.
func (c *Client) SetNodeEligibility(ctx context.Context, id string, eligible bool, w *WriteOptions) (*structs.NodeUpdateHTTPResponse, *WriteMeta, error) {
	e := structs.NodeSchedulingIneligible
	if eligible {
		e = structs.NodeSchedulingEligible
	}
	req := &structs.NodeEligibilityHTTPRequest{NodeID: id, Eligibility: e}
	var out structs.NodeUpdateHTTPResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/node/"+url.PathEscape(id)+"/eligibility", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

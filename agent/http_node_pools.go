package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// registerNodePools adds the node pool endpoints: the list and the write
// on mux, and the per-pool paths on pools, a mux of their own (see
// NewHTTPHandler: Go's ServeMux cannot tell /v1/node/pool/{name} from
// /v1/node/{id}/allocations).
func (h *httpAPI) registerNodePools(mux, pools *http.ServeMux) {
	mux.Handle("GET /v1/node/pools", h.wrap(h.nodePoolList))
	mux.Handle("PUT /v1/node/pools", h.wrap(h.nodePoolPut))
	mux.Handle("POST /v1/node/pools", h.wrap(h.nodePoolPut))
	pools.Handle("GET /v1/node/pool/{name}", h.wrap(h.nodePoolGet))
	pools.Handle("DELETE /v1/node/pool/{name}", h.wrap(h.nodePoolDelete))
	pools.Handle("GET /v1/node/pool/{name}/nodes", h.wrap(h.nodePoolNodes))
	pools.Handle("GET /v1/node/pool/{name}/jobs", h.wrap(h.nodePoolJobs))
	h.registerPoolAutoscale(pools)
}

// GET /v1/node/pools[?prefix=]: every pool, built-in ones included.
func (h *httpAPI) nodePoolList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.NodePoolListResponse
	if err := h.srv.RPC("NodePool.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.NodePools, nil
}

// PUT|POST /v1/node/pools: body api.NodePool, created or replaced.
func (h *httpAPI) nodePoolPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct {
		structs.NodePool
		// NodeIdentityTTL is Nomad's node identity lifetime ("" or 0
		// when unset, as Nomad's client sends it).
		NodeIdentityTTL any
	}
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	switch v := body.NodeIdentityTTL.(type) {
	case nil:
	case string:
		if v != "" && v != "0s" {
			return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeIdentityTTL", Message: "Drover does not support node identities"}}}
		}
	case float64:
		if v != 0 {
			return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeIdentityTTL", Message: "Drover does not support node identities"}}}
		}
	}
	pool := body.NodePool
	pool.CreateIndex, pool.ModifyIndex = 0, 0
	if err := pool.Validate(); err != nil {
		return nil, err
	}
	args := structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{&pool}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("NodePool.UpsertNodePools", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// GET /v1/node/pool/<name>: one pool, 404 when it does not exist.
func (h *httpAPI) nodePoolGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleNodePoolResponse
	if err := h.srv.RPC("NodePool.GetNodePool", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.NodePool == nil {
		return nil, notFound("node pool not found")
	}
	return out.NodePool, nil
}

// DELETE /v1/node/pool/<name>
func (h *httpAPI) nodePoolDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodePoolDeleteRequest{Names: []string{r.PathValue("name")}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("NodePool.DeleteNodePools", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// GET /v1/node/pool/<name>/nodes: the pool's node stubs.
func (h *httpAPI) nodePoolNodes(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.NodePoolNodesResponse
	if err := h.srv.RPC("NodePool.ListNodes", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.Nodes, nil
}

// GET /v1/node/pool/<name>/jobs[?namespace=]: the pool's job stubs.
func (h *httpAPI) nodePoolJobs(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.NodePoolJobsResponse
	if err := h.srv.RPC("NodePool.ListJobs", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.Jobs, nil
}

package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/nodes[?prefix=&per_page=&next_token=]: node stubs, sorted by ID.
func (h *httpAPI) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.NodeListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	var out structs.NodeListResponse
	if err := h.srv.RPC("Node.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return paginate(w, page, out.Nodes, func(n *structs.NodeListStub) string { return n.ID }), nil
}

// GET /v1/node/<id>: one node, 404 when it does not exist.
func (h *httpAPI) nodeGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodeSpecificRequest{NodeID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleNodeResponse
	if err := h.srv.RPC("Node.GetNode", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Node == nil {
		return nil, notFound("node not found")
	}
	return nodeForHTTP(out.Node), nil
}

// GET /v1/node/<id>/allocations: the node's allocations, in full.
func (h *httpAPI) nodeAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodeSpecificRequest{NodeID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.NodeAllocsResponse
	if err := h.srv.RPC("Node.GetAllocs", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return allocsForHTTP(out.Allocs), nil
}

// PUT|POST /v1/node/<id>/drain: start a drain ({"DrainSpec": {"Deadline":
// ns, "IgnoreSystemJobs": bool}}) or end one ({"DrainSpec": null,
// "MarkEligible": bool}).
func (h *httpAPI) nodeDrain(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.NodeDrainHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if body.NodeID != "" && body.NodeID != id {
		return nil, badRequest("Node ID %q does not match the URL's node %q", body.NodeID, id)
	}
	args := structs.NodeUpdateDrainRequest{NodeID: id, MarkEligible: body.MarkEligible}
	if spec := body.DrainSpec; spec != nil {
		args.DrainStrategy = &structs.DrainStrategy{Deadline: spec.Deadline, IgnoreSystemJobs: spec.IgnoreSystemJobs}
	}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.NodeUpdateResponse
	if err := h.srv.RPC("Node.UpdateDrain", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nodeUpdateHTTP(&out), nil
}

// PUT|POST /v1/node/<id>/eligibility: {"Eligibility": "eligible"} or
// "ineligible".
func (h *httpAPI) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.NodeEligibilityHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if body.NodeID != "" && body.NodeID != id {
		return nil, badRequest("Node ID %q does not match the URL's node %q", body.NodeID, id)
	}
	switch body.Eligibility {
	case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
	default:
		return nil, badRequest("Invalid Eligibility %q: want %q or %q", body.Eligibility,
			structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	args := structs.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: body.Eligibility}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.NodeUpdateResponse
	if err := h.srv.RPC("Node.UpdateEligibility", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nodeUpdateHTTP(&out), nil
}

func nodeUpdateHTTP(out *structs.NodeUpdateResponse) *structs.NodeUpdateHTTPResponse {
	return &structs.NodeUpdateHTTPResponse{NodeModifyIndex: out.NodeModifyIndex,
		EvalIDs: nonNil(out.EvalIDs), EvalCreateIndex: out.EvalCreateIndex}
}

package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/nodes[?prefix=]: node stubs, sorted by ID.
func (h *httpAPI) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.NodeListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.NodeListResponse
	if err := h.srv.RPC("Node.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Nodes == nil {
		out.Nodes = []*structs.NodeListStub{}
	}
	return out.Nodes, nil
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
	return out.Node, nil
}

// GET /v1/evaluation/<id>: one evaluation, 404 when it does not exist.
func (h *httpAPI) evalGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.EvalSpecificRequest{EvalID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleEvalResponse
	if err := h.srv.RPC("Eval.GetEval", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Eval == nil {
		return nil, notFound("eval not found")
	}
	return out.Eval, nil
}

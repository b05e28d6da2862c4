package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/evaluations[?prefix=&job=&status=&per_page=&next_token=]:
// evaluations, sorted by ID.
func (h *httpAPI) evalList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.EvalListRequest{FilterJobID: r.URL.Query().Get("job"), FilterEvalStatus: r.URL.Query().Get("status")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	var out structs.EvalListResponse
	if err := h.srv.RPC("Eval.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return paginate(w, page, out.Evaluations, func(e *structs.Evaluation) string { return e.ID }), nil
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

// GET /v1/evaluation/<id>/allocations: stubs of the allocations the
// evaluation placed or changed.
func (h *httpAPI) evalAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.EvalSpecificRequest{EvalID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.AllocListResponse
	if err := h.srv.RPC("Eval.Allocations", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Allocations), nil
}

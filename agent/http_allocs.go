package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/allocations[?prefix=&per_page=&next_token=]: allocation stubs,
// sorted by ID.
func (h *httpAPI) allocList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.AllocListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	var out structs.AllocListResponse
	if err := h.srv.RPC("Alloc.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return paginate(w, page, out.Allocations, func(a *structs.AllocListStub) string { return a.ID }), nil
}

// GET /v1/allocation/<id>: one allocation with its job, 404 when it does
// not exist.
func (h *httpAPI) allocGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.AllocSpecificRequest{AllocID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleAllocResponse
	if err := h.srv.RPC("Alloc.GetAlloc", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Alloc == nil {
		return nil, notFound("alloc not found")
	}
	return allocForHTTP(out.Alloc), nil
}

// PUT|POST /v1/allocation/<id>/stop: stop one allocation; the scheduler
// replaces it as its job says. Answers {"EvalID": ..., "Index": ...}.
func (h *httpAPI) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.AllocStopRequest{AllocID: r.PathValue("id")}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.AllocStopResponse
	if err := h.srv.RPC("Alloc.Stop", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// PUT /v1/system/gc: run garbage collection of terminal evaluations,
// allocations, jobs and down nodes now.
func (h *httpAPI) systemGC(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("System.GarbageCollect", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// unsupported answers 501 for a Nomad feature Drover does not have.
func unsupported(feature string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support %s", feature)
	}
}

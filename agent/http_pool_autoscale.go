package agent

import (
	"encoding/json"
	"net/http"

	"github.com/drover-project/drover/structs"
)

// registerPoolAutoscale adds the autoscaled node pool endpoints (Drover's
// own; docs/operations.md) to the node pools' mux:
//
//	GET|PUT|POST|DELETE /v1/node/pool/<name>/autoscaler  configuration and status
//	GET /v1/node/pool/<name>/instances                   instances ("all": every pool's)
//	GET|PUT|POST /v1/node/pool/<name>/instance/<id>      one instance; its behaviour
func (h *httpAPI) registerPoolAutoscale(pools *http.ServeMux) {
	pools.Handle("GET /v1/node/pool/{name}/autoscaler", h.wrap(h.poolAutoscalerGet))
	pools.Handle("PUT /v1/node/pool/{name}/autoscaler", h.wrap(h.poolAutoscalerPut))
	pools.Handle("POST /v1/node/pool/{name}/autoscaler", h.wrap(h.poolAutoscalerPut))
	pools.Handle("DELETE /v1/node/pool/{name}/autoscaler", h.wrap(h.poolAutoscalerDelete))
	pools.Handle("GET /v1/node/pool/{name}/instances", h.wrap(h.poolInstances))
	pools.Handle("GET /v1/node/pool/{name}/instance/{id}", h.wrap(h.poolInstanceGet))
	pools.Handle("PUT /v1/node/pool/{name}/instance/{id}", h.wrap(h.poolInstanceBehavior))
	pools.Handle("POST /v1/node/pool/{name}/instance/{id}", h.wrap(h.poolInstanceBehavior))
}

// GET /v1/node/pool/<name>/autoscaler: {"Autoscaler": ..., "Status": ...};
// 404 when the pool has neither.
func (h *httpAPI) poolAutoscalerGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.PoolAutoscalerResponse
	if err := h.srv.RPC("NodePool.GetAutoscaler", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Autoscaler == nil && out.Status == nil {
		return nil, notFound("node pool has no autoscaler")
	}
	return struct {
		Autoscaler *structs.PoolAutoscaler
		Status     *structs.PoolAutoscaleStatus
	}{out.Autoscaler, out.Status}, nil
}

// PUT|POST /v1/node/pool/<name>/autoscaler: body structs.PoolAutoscaler
// (durations in nanoseconds); an unknown field is a 400 naming it.
func (h *httpAPI) poolAutoscalerPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var a structs.PoolAutoscaler
	if err := readBody(w, r, func(dec *json.Decoder) error {
		dec.DisallowUnknownFields()
		return dec.Decode(&a)
	}); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if a.Pool == "" {
		a.Pool = name
	}
	if a.Pool != name {
		return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: "Pool", Message: "must be the node pool of the path (" + name + "); got " + a.Pool}}}
	}
	a.CreateIndex, a.ModifyIndex = 0, 0
	args := structs.PoolAutoscalerUpsertRequest{Autoscaler: &a}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("NodePool.UpsertAutoscaler", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// DELETE /v1/node/pool/<name>/autoscaler
func (h *httpAPI) poolAutoscalerDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.PoolAutoscalerUpsertRequest{Delete: r.PathValue("name")}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("NodePool.DeleteAutoscaler", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// GET /v1/node/pool/<name>/instances
func (h *httpAPI) poolInstances(w http.ResponseWriter, r *http.Request) (any, error) {
	out, err := h.listPoolInstances(w, r)
	if err != nil {
		return nil, err
	}
	return out.Instances, nil
}

func (h *httpAPI) listPoolInstances(w http.ResponseWriter, r *http.Request) (*structs.PoolInstancesResponse, error) {
	args := structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.PoolInstancesResponse
	if err := h.srv.RPC("NodePool.ListInstances", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return &out, nil
}

// GET /v1/node/pool/<name>/instance/<id>: one instance ("all": of any
// pool); 404 when unknown.
func (h *httpAPI) poolInstanceGet(w http.ResponseWriter, r *http.Request) (any, error) {
	out, err := h.listPoolInstances(w, r)
	if err != nil {
		return nil, err
	}
	for _, in := range out.Instances {
		if in.ID == r.PathValue("id") {
			return in, nil
		}
	}
	return nil, notFound("instance not found")
}

// PUT|POST /v1/node/pool/<name>/instance/<id>: body {"Behavior": "run" |
// "hold" | "drain"}.
func (h *httpAPI) poolInstanceBehavior(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct{ Behavior string }
	if err := readBody(w, r, func(dec *json.Decoder) error {
		dec.DisallowUnknownFields()
		return dec.Decode(&body)
	}); err != nil {
		return nil, err
	}
	args := structs.PoolInstanceBehaviorRequest{InstanceID: r.PathValue("id"), Behavior: body.Behavior}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	if pool := r.PathValue("name"); pool != structs.NodePoolAll {
		var list structs.PoolInstancesResponse
		q := structs.NodePoolSpecificRequest{Name: pool}
		q.Region, q.AuthToken = args.Region, args.AuthToken
		if err := h.srv.RPC("NodePool.ListInstances", &q, &list); err != nil {
			return nil, err
		}
		found := false
		for _, in := range list.Instances {
			found = found || in.ID == args.InstanceID
		}
		if !found {
			return nil, notFound("instance not found in node pool " + pool)
		}
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("NodePool.SetInstanceBehavior", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

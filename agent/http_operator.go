package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/operator/raft/configuration: the Raft configuration.
func (h *httpAPI) raftConfiguration(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.RaftConfigurationResponse
	if err := h.srv.RPC("Operator.RaftGetConfiguration", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	if out.Servers == nil {
		out.Servers = []*structs.RaftServer{}
	}
	return out, nil
}

// DELETE /v1/operator/raft/peer?id=|address=: remove one Raft peer.
func (h *httpAPI) raftRemovePeer(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	args := structs.RaftPeerRequest{ID: q.Get("id"), Address: q.Get("address")}
	if (args.ID == "") == (args.Address == "") {
		return nil, badRequest("Give exactly one of ?id= or ?address=")
	}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("Operator.RaftRemovePeer", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// GET /v1/operator/queue: the scheduling queue as the leader sees it
// (Drover's own; docs/metrics.md, "Queue metrics").
func (h *httpAPI) operatorQueue(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.QueueStatsResponse
	if err := h.srv.RPC("Operator.QueueStats", &args, &out); err != nil {
		return nil, err
	}
	if out.WaitingByJob == nil {
		out.WaitingByJob = []*structs.QueueJobCount{}
	}
	return out, nil
}

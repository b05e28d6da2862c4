package agent

import (
	"net/http"
	"strconv"

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

// PUT|POST /v1/operator/raft/transfer-leadership[?id=|?address=]: hand
// leadership to that server, or with neither to the follower Raft picks.
// The reply is Nomad's LeadershipTransferResponse shape.
func (h *httpAPI) raftTransferLeadership(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	ids, hasID := q["id"]
	addrs, hasAddr := q["address"]
	switch {
	case hasID && hasAddr:
		return nil, badRequest("Give only one of ?id= or ?address=")
	case len(ids) > 1 || len(addrs) > 1:
		return nil, badRequest("Give one ?id= or one ?address=, not several")
	case hasID && ids[0] == "":
		return nil, badRequest("?id= is empty: give the Raft ID of the target server")
	case hasAddr && addrs[0] == "":
		return nil, badRequest("?address= is empty: give the Raft address (host:port) of the target server")
	}
	args := structs.LeadershipTransferRequest{ID: q.Get("id"), Address: q.Get("address")}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.LeadershipTransferResponse
	if err := h.srv.RPC("Operator.TransferLeadership", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// GET /v1/operator/scheduler/configuration: the scheduler configuration,
// wrapped as Nomad's SchedulerConfigurationResponse.
func (h *httpAPI) schedulerGetConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SchedulerConfigurationResponse
	if err := h.srv.RPC("Operator.SchedulerGetConfiguration", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out, nil
}

// PUT|POST /v1/operator/scheduler/configuration[?cas=<index>]: body
// api.SchedulerConfiguration. With ?cas= the write applies only if the
// stored configuration's ModifyIndex is that index; Updated says whether
// it did.
func (h *httpAPI) schedulerSetConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.SchedulerSetConfigRequest
	if err := decodeBody(w, r, &args.Config); err != nil {
		return nil, err
	}
	args.Config.CreateIndex = 0
	if v, ok := r.URL.Query()["cas"]; ok {
		cas, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil {
			return nil, badRequest("Error parsing cas value %q: must be a non-negative integer", v[0])
		}
		args.Config.ModifyIndex, args.CAS = cas, true
	}
	if err := args.Config.Validate(); err != nil {
		return nil, err
	}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.SchedulerSetConfigurationResponse
	if err := h.srv.RPC("Operator.SchedulerSetConfiguration", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
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

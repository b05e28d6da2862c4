package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/status/leader: the leader's RPC address as a JSON string ("" when
// there is none).
func (h *httpAPI) statusLeader(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var leader string
	if err := h.srv.RPC("Status.Leader", &args, &leader); err != nil {
		return nil, err
	}
	return leader, nil
}

// GET /v1/status/peers: the Raft peers' addresses as a JSON array.
func (h *httpAPI) statusPeers(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var peers []string
	if err := h.srv.RPC("Status.Peers", &args, &peers); err != nil {
		return nil, err
	}
	if peers == nil {
		peers = []string{}
	}
	return peers, nil
}

package agent

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/drover-project/drover/structs"
)

// Drover does not yet run deployments: no job has one. The two read
// endpoints Nomad's CLI calls for every `nomad job status <id>` answer
// what Nomad's server answers for a job without deployments, for any job
// ID (Nomad does not look the job up either): the latest deployment is
// JSON null, the list is []. Every other deployment endpoint stays a 501.

// noDeploymentsIndex is the X-Nomad-Index of the deployment answers: the
// index of a table that is never written. setIndex sends 1 for 0 anyway.
const noDeploymentsIndex = 1

// jsonNull is a handler result encoded as the JSON literal null.
var jsonNull = json.RawMessage("null")

// GET /v1/job/<id>/deployment: the job's latest deployment; always null.
func (h *httpAPI) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.noDeployments(w, r); err != nil {
		return nil, err
	}
	return jsonNull, nil
}

// GET /v1/job/<id>/deployments[?all=true]: the job's deployments; always [].
func (h *httpAPI) jobDeployments(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := boolParam(r, "all"); err != nil {
		return nil, err
	}
	if err := h.noDeployments(w, r); err != nil {
		return nil, err
	}
	return []struct{}{}, nil
}

// noDeployments answers the query side of a deployment read: parameters,
// the leader check a forwarded read would make, a blocking query's wait
// (the answer never changes, so a query blocking on its index waits out
// its time, as Nomad's does on an unwritten table), and the meta headers.
func (h *httpAPI) noDeployments(w http.ResponseWriter, r *http.Request) error {
	var q structs.QueryOptions
	if err := h.parseQuery(w, r, &q); err != nil {
		return err
	}
	leader := h.srv.Leader()
	if leader == "" && !q.AllowStale {
		return structs.ErrNoLeader
	}
	if q.MinQueryIndex >= noDeploymentsIndex {
		t := time.NewTimer(q.MaxQueryTime)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	setMeta(w, &structs.QueryMeta{Index: noDeploymentsIndex, KnownLeader: leader != ""})
	return nil
}

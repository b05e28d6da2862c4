package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/job/<id>/versions[?diffs=true]: the job's kept versions, newest
// first, and with diffs each one's change from the version before it.
func (h *httpAPI) jobVersions(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobVersionsRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	diffs, err := boolParam(r, "diffs")
	if err != nil {
		return nil, err
	}
	args.Diffs = diffs
	q := r.URL.Query()
	if q.Get("diff_tag") != "" || q.Get("diff_version") != "" {
		return nil, structs.NewError(structs.ErrCodeUnsupported,
			"Drover does not support diff_tag or diff_version (diffs against a chosen version); diffs=true compares each version with the one before it")
	}
	var out structs.JobVersionsResponse
	if err := h.srv.RPC("Job.GetJobVersions", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	out.Versions = nonNil(out.Versions)
	return out, nil
}

// PUT|POST /v1/job/<id>/revert: register a kept version again as the
// newest one. The body is Nomad's JobRevertRequest.
func (h *httpAPI) jobRevert(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobRevertHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	if body.JobID == "" {
		return nil, badRequest("JobID must be specified")
	}
	if id := r.PathValue("id"); body.JobID != id {
		return nil, badRequest("Job ID %q does not match the URL's job %q", body.JobID, id)
	}
	args := structs.JobRevertRequest{JobID: body.JobID, JobVersion: body.JobVersion,
		EnforcePriorVersion: body.EnforcePriorVersion, ConsulToken: body.ConsulToken, VaultToken: body.VaultToken}
	if err := h.parseJobWrite(r, body.Region, body.Namespace, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.JobRegisterResponse
	if err := h.srv.RPC("Job.Revert", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// PUT|POST /v1/job/<id>/stable: set a kept version's Stable flag. The body
// is Nomad's JobStabilityRequest.
func (h *httpAPI) jobStable(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobStabilityHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	if body.JobID == "" {
		return nil, badRequest("JobID must be specified")
	}
	if id := r.PathValue("id"); body.JobID != id {
		return nil, badRequest("Job ID %q does not match the URL's job %q", body.JobID, id)
	}
	args := structs.JobStabilityRequest{JobID: body.JobID, JobVersion: body.JobVersion, Stable: body.Stable}
	if err := h.parseJobWrite(r, body.Region, body.Namespace, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.JobStabilityResponse
	if err := h.srv.RPC("Job.Stable", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

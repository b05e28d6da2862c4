package agent

import (
	"encoding/json"
	"net/http"

	"github.com/drover-project/drover/structs"
)

// Deployments, in Nomad's paths and shapes: reads (blocking queries), and
// the operator's changes. A deployment of another namespace, or none, is
// a 404 "deployment not found", as in Nomad.

// jsonNull is a handler result encoded as the JSON literal null.
var jsonNull = json.RawMessage("null")

// GET /v1/deployments[?prefix=]: the namespace's deployments, newest first.
func (h *httpAPI) deploymentList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.DeploymentListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.DeploymentListResponse
	if err := h.srv.RPC("Deployment.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Deployments), nil
}

// GET /v1/deployment/<id>: one deployment.
func (h *httpAPI) deploymentGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.DeploymentSpecificRequest{DeploymentID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleDeploymentResponse
	if err := h.srv.RPC("Deployment.GetDeployment", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Deployment == nil {
		return nil, notFound("deployment not found")
	}
	return out.Deployment, nil
}

// GET /v1/deployment/allocations/<id>: the deployment's allocations.
func (h *httpAPI) deploymentAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.DeploymentSpecificRequest{DeploymentID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.AllocListResponse
	if err := h.srv.RPC("Deployment.Allocations", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Allocations), nil
}

// deploymentBody is the body of a deployment change, as Nomad's client
// sends it (every change's fields; each handler reads its own).
type deploymentBody struct {
	DeploymentID           string
	All                    bool
	Groups                 []string
	Pause                  bool
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	Region, Namespace      string
}

// readDeploymentBody reads the body (an empty one is allowed: fail has
// none) and fills wr; the body's DeploymentID, when given, must be the
// path's.
func (h *httpAPI) readDeploymentBody(w http.ResponseWriter, r *http.Request, wr *structs.WriteRequest) (*deploymentBody, error) {
	var body deploymentBody
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &body); err != nil {
			return nil, err
		}
	}
	id := r.PathValue("id")
	if body.DeploymentID != "" && body.DeploymentID != id {
		return nil, badRequest("Deployment ID %q does not match the URL's deployment %q", body.DeploymentID, id)
	}
	body.DeploymentID = id
	if err := h.parseJobWrite(r, body.Region, body.Namespace, wr); err != nil {
		return nil, err
	}
	return &body, nil
}

// deploymentChange runs one change and answers Nomad's
// DeploymentUpdateResponse.
func (h *httpAPI) deploymentChange(w http.ResponseWriter, method string, args any) (any, error) {
	var out structs.DeploymentUpdateResponse
	if err := h.srv.RPC(method, args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// PUT|POST /v1/deployment/promote/<id>: promote canaries (All or Groups).
func (h *httpAPI) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.DeploymentPromoteRequest
	body, err := h.readDeploymentBody(w, r, &args.WriteRequest)
	if err != nil {
		return nil, err
	}
	if !body.All && len(body.Groups) == 0 {
		return nil, badRequest("must specify either All or Groups to promote")
	}
	args.DeploymentID, args.All, args.Groups = body.DeploymentID, body.All, body.Groups
	return h.deploymentChange(w, "Deployment.Promote", &args)
}

// PUT|POST /v1/deployment/fail/<id>: fail a running deployment.
func (h *httpAPI) deploymentFail(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.DeploymentFailRequest
	body, err := h.readDeploymentBody(w, r, &args.WriteRequest)
	if err != nil {
		return nil, err
	}
	args.DeploymentID = body.DeploymentID
	return h.deploymentChange(w, "Deployment.Fail", &args)
}

// PUT|POST /v1/deployment/pause/<id>: pause ("Pause": true) or resume.
func (h *httpAPI) deploymentPause(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.DeploymentPauseRequest
	body, err := h.readDeploymentBody(w, r, &args.WriteRequest)
	if err != nil {
		return nil, err
	}
	args.DeploymentID, args.Pause = body.DeploymentID, body.Pause
	return h.deploymentChange(w, "Deployment.Pause", &args)
}

// PUT|POST /v1/deployment/allocation-health/<id>: set allocations' health.
func (h *httpAPI) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.DeploymentAllocHealthRequest
	body, err := h.readDeploymentBody(w, r, &args.WriteRequest)
	if err != nil {
		return nil, err
	}
	args.DeploymentID = body.DeploymentID
	args.HealthyAllocationIDs, args.UnhealthyAllocationIDs = body.HealthyAllocationIDs, body.UnhealthyAllocationIDs
	return h.deploymentChange(w, "Deployment.SetAllocHealth", &args)
}

// GET /v1/job/<id>/deployments[?all=true]: the job's deployments, newest
// first.
func (h *httpAPI) jobDeployments(w http.ResponseWriter, r *http.Request) (any, error) {
	args, err := h.jobListArgs(w, r)
	if err != nil {
		return nil, err
	}
	var out structs.DeploymentListResponse
	if err := h.srv.RPC("Job.Deployments", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Deployments), nil
}

// GET /v1/job/<id>/deployment: the job's latest deployment, JSON null when
// it has none (as Nomad answers).
func (h *httpAPI) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleDeploymentResponse
	if err := h.srv.RPC("Job.LatestDeployment", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Deployment == nil {
		return jsonNull, nil
	}
	return out.Deployment, nil
}

// errUnblockMultiregion answers /v1/deployment/unblock/<id>: Nomad unblocks
// only multiregion deployments, which Drover refuses at registration
// (Job.Multiregion), so no Drover deployment can be blocked.
var errUnblockMultiregion = structs.NewError(structs.ErrCodeInvalid, "Drover does not support multiregion deployments (unblock)")

// PUT|POST /v1/deployment/unblock/<id>: a 400, see errUnblockMultiregion.
func (h *httpAPI) deploymentUnblock(http.ResponseWriter, *http.Request) (any, error) {
	return nil, errUnblockMultiregion
}

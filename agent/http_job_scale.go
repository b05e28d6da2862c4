package agent

import (
	"net/http"

	"github.com/drover-project/drover/structs"
)

// GET /v1/job/<id>/scale: the job's scaling state per group (Nomad's
// JobScaleStatus); 404 when the job does not exist.
func (h *httpAPI) jobScaleStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.JobScaleStatusResponse
	if err := h.srv.RPC("Job.ScaleStatus", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.JobScaleStatus == nil {
		return nil, notFound("job not found")
	}
	return out.JobScaleStatus, nil
}

// PUT|POST /v1/job/<id>/scale: set a group's count and/or record a
// scaling event. The body is Nomad's ScalingRequest.
func (h *httpAPI) jobScale(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.ScalingHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if j := body.Target[structs.ScalingTargetJob]; j != "" && j != id {
		return nil, badRequest("Job ID %q in the scaling target does not match the URL's job %q", j, id)
	}
	args := structs.ScalingRequest{JobID: id, Target: body.Target, Count: body.Count, Message: body.Message,
		Error: body.Error, Meta: body.Meta, PolicyOverride: body.PolicyOverride, JobModifyIndex: body.JobModifyIndex}
	if err := h.parseJobWrite(r, body.Region, body.Namespace, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.JobRegisterResponse
	if err := h.srv.RPC("Job.Scale", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// GET /v1/scaling/policies[?job=&type=]: the groups' scaling policies.
func (h *httpAPI) scalingPolicies(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ScalingPolicyListRequest{Job: r.URL.Query().Get("job"), Type: r.URL.Query().Get("type")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.ScalingPolicyListResponse
	if err := h.srv.RPC("Scaling.ListPolicies", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Policies), nil
}

// GET /v1/scaling/policy/<id>: one scaling policy; 404 when unknown.
func (h *httpAPI) scalingPolicy(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ScalingPolicySpecificRequest{ID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleScalingPolicyResponse
	if err := h.srv.RPC("Scaling.GetPolicy", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Policy == nil {
		return nil, notFound("policy not found")
	}
	return out.Policy, nil
}

package agent

import (
	"net/http"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// GET /v1/jobs[?prefix=]: job stubs, sorted by namespace and ID.
func (h *httpAPI) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.JobListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.JobListResponse
	if err := h.srv.RPC("Job.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Jobs == nil {
		out.Jobs = []*structs.JobListStub{}
	}
	return out.Jobs, nil
}

// PUT|POST /v1/jobs and /v1/job/<id>: register or update a job. The body is
// {"Job": {...}, "EnforceIndex": bool, "JobModifyIndex": n}. Problems with
// the body are answered here, before any RPC; the server validates the job
// itself and answers a *structs.ValidationError.
func (h *httpAPI) jobRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobRegisterHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, badRequest("Job must be specified")
	}
	if id := r.PathValue("id"); id != "" && body.Job.ID != id {
		return nil, badRequest("Job ID %q does not match the URL's job %q", body.Job.ID, id)
	}
	args := structs.JobRegisterRequest{
		Job:            body.Job,
		EnforceIndex:   body.EnforceIndex,
		JobModifyIndex: body.JobModifyIndex,
	}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	if err := reconcileNamespace(&args.WriteRequest, &body.Job.Namespace); err != nil {
		return nil, err
	}
	if body.Job.Region == "" {
		body.Job.Region = args.Region
	} else if body.Job.Region != args.Region {
		return nil, badRequest("Job region %q is not this cluster's region %q", body.Job.Region, args.Region)
	}
	var out structs.JobRegisterResponse
	if err := h.srv.RPC("Job.Register", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// reconcileNamespace makes the request's and the object's namespace agree:
// an empty one takes the other's; two different ones are an error.
func reconcileNamespace(wr *structs.WriteRequest, objNS *string) error {
	switch {
	case *objNS == "" && wr.Namespace == "":
		*objNS = structs.DefaultNamespace
		wr.Namespace = structs.DefaultNamespace
	case *objNS == "":
		*objNS = wr.Namespace
	case wr.Namespace == "":
		wr.Namespace = *objNS
	case *objNS != wr.Namespace:
		return badRequest("Job namespace %q does not match request namespace %q", *objNS, wr.Namespace)
	}
	return nil
}

// GET /v1/job/<id>: one job, 404 when it does not exist.
func (h *httpAPI) jobGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SingleJobResponse
	if err := h.srv.RPC("Job.GetJob", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Job == nil {
		return nil, notFound("job not found")
	}
	return out.Job, nil
}

// DELETE /v1/job/<id>[?purge=true]: stop a job, or remove it with purge.
func (h *httpAPI) jobDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobDeregisterRequest{JobID: r.PathValue("id")}
	if s := r.URL.Query().Get("purge"); s != "" {
		purge, err := strconv.ParseBool(s)
		if err != nil {
			return nil, badRequest("Invalid purge value %q: want true or false", s)
		}
		args.Purge = purge
	}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.JobDeregisterResponse
	if err := h.srv.RPC("Job.Deregister", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

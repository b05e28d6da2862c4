package agent

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/structs"
)

// GET /v1/jobs[?prefix=&per_page=&next_token=]: job stubs, sorted by
// namespace and ID.
func (h *httpAPI) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.JobListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	var out structs.JobListResponse
	if err := h.srv.RPC("Job.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return paginate(w, page, out.Jobs, func(j *structs.JobListStub) string { return j.Namespace + "." + j.ID }), nil
}

// PUT|POST /v1/jobs and /v1/job/<id>: register or update a job. The body is
// {"Job": {...}, "EnforceIndex": bool, "JobModifyIndex": n}. Problems with
// the body are answered here, before any RPC; the server validates the job
// itself and answers a *structs.ValidationError.
func (h *httpAPI) jobRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobRegisterHTTPRequest
	if err := decodeJobBody(w, r, &body); err != nil {
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
	if err := h.parseJobWrite(r, body.Region, body.Namespace, &args.WriteRequest); err != nil {
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

// parseJobWrite reads the write request of a job register or plan: the
// query string's region and namespace, else the body's (Nomad's client
// embeds its WriteRequest in the body).
func (h *httpAPI) parseJobWrite(r *http.Request, bodyRegion, bodyNamespace string, wr *structs.WriteRequest) error {
	q := r.URL.Query()
	if q.Get("region") == "" && bodyRegion != "" && bodyRegion != h.cfg.Region {
		return badRequest("No path to region %q: this cluster serves region %q", bodyRegion, h.cfg.Region)
	}
	if err := h.parseWrite(r, wr); err != nil {
		return err
	}
	if wr.Namespace == "" {
		wr.Namespace = bodyNamespace
	}
	return nil
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

// jobListArgs reads a job-specific list request: the job from the path,
// the query options and ?all=true.
func (h *httpAPI) jobListArgs(w http.ResponseWriter, r *http.Request) (structs.JobSpecificRequest, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return args, err
	}
	all, err := boolParam(r, "all")
	args.All = all
	return args, err
}

// GET /v1/job/<id>/allocations[?all=true]: stubs of the job's allocations.
func (h *httpAPI) jobAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args, err := h.jobListArgs(w, r)
	if err != nil {
		return nil, err
	}
	var out structs.AllocListResponse
	if err := h.srv.RPC("Job.Allocations", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Allocations), nil
}

// GET /v1/job/<id>/evaluations: the job's evaluations.
func (h *httpAPI) jobEvaluations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.EvalListResponse
	if err := h.srv.RPC("Job.Evaluations", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Evaluations), nil
}

// GET /v1/job/<id>/summary: allocation counts per group; 404 when the job
// does not exist.
func (h *httpAPI) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.JobSummaryResponse
	if err := h.srv.RPC("Job.Summary", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.JobSummary == nil {
		return nil, notFound("job not found")
	}
	return out.JobSummary, nil
}

// PUT|POST /v1/job/<id>/plan: a dry run of registering the body's job.
// The body is {"Job": {...}, "Diff": bool}.
func (h *httpAPI) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobPlanHTTPRequest
	if err := decodeJobBody(w, r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, badRequest("Job must be specified")
	}
	if id := r.PathValue("id"); body.Job.ID != id {
		return nil, badRequest("Job ID %q does not match the URL's job %q", body.Job.ID, id)
	}
	args := structs.JobPlanRequest{Job: body.Job, Diff: body.Diff}
	if err := h.parseJobWrite(r, body.Region, body.Namespace, &args.WriteRequest); err != nil {
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
	var out structs.JobPlanResponse
	if err := h.srv.RPC("Job.Plan", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// PUT|POST /v1/validate/job: check the body's job as registering it would,
// writing nothing. As in Nomad, the job's problems are the answer (200 with
// ValidationErrors), so Nomad's `job validate` lists them; a field Drover
// does not support is one of them.
func (h *httpAPI) jobValidate(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobValidateHTTPRequest
	var out structs.JobValidateResponse
	if err := decodeJobBody(w, r, &body); err != nil {
		if err := out.SetProblems(err); err != nil {
			return nil, err
		}
		return out, nil
	}
	if body.Job == nil {
		return nil, badRequest("Job must be specified")
	}
	args := structs.JobValidateRequest{Job: body.Job}
	if err := h.parseJobWrite(r, body.Region, body.Namespace, &args.WriteRequest); err != nil {
		return nil, err
	}
	if err := reconcileNamespace(&args.WriteRequest, &body.Job.Namespace); err != nil {
		return nil, err
	}
	if err := h.srv.RPC("Job.Validate", &args, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// PUT|POST /v1/jobs/parse: turn an HCL job file into the API's job, as
// `drover job run` would send it. Canonicalize fills the defaults the
// server would. Nothing is registered.
func (h *httpAPI) jobsParse(w http.ResponseWriter, r *http.Request) (any, error) {
	var body structs.JobsParseHTTPRequest
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	switch {
	case body.HCLv1:
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support HCL1 job files; it reads HCL2")
	case body.Variables != "":
		return nil, structs.NewError(structs.ErrCodeUnsupported,
			"Drover does not support Variables in /v1/jobs/parse; pass -var to drover job run")
	case strings.TrimSpace(body.JobHCL) == "":
		return nil, badRequest("JobHCL must be specified")
	}
	job, err := jobspec.Parse("job.hcl", []byte(body.JobHCL), nil)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if body.Canonicalize {
		job.Canonicalize()
	}
	return job, nil
}

// boolParam reads an optional boolean query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest("Invalid %s value %q: want true or false", name, s)
	}
	return b, nil
}

// nonNil returns s, or an empty slice for nil, so lists encode as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// PUT|POST /v1/job/<id>/periodic/force: launch a run of a periodic job
// now; Nomad's answer {EvalID, EvalCreateIndex, Index}.
func (h *httpAPI) jobPeriodicForce(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.PeriodicForceRequest{JobID: r.PathValue("id")}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.PeriodicForceResponse
	if err := h.srv.RPC("Job.PeriodicForce", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

// dispatchBody is the body of a dispatch, Nomad's JobDispatchRequest
// (Payload is base64 in JSON). Every field of Nomad's is acted on.
type dispatchBody struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdempotencyToken string
	IdPrefixTemplate string
	Priority         int
}

// PUT|POST /v1/job/<id>/dispatch: run a parameterized job once; Nomad's
// answer {DispatchedJobID, EvalID, EvalCreateIndex, JobCreateIndex, Index}.
func (h *httpAPI) jobDispatch(w http.ResponseWriter, r *http.Request) (any, error) {
	var body dispatchBody
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if body.JobID != "" && body.JobID != id {
		return nil, badRequest("Job ID %q does not match the URL's job %q", body.JobID, id)
	}
	args := structs.JobDispatchRequest{JobID: id, Payload: body.Payload, Meta: body.Meta,
		IdempotencyToken: body.IdempotencyToken, IdPrefixTemplate: body.IdPrefixTemplate, Priority: body.Priority}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	// Nomad's client sends the token as a query parameter (its
	// WriteOptions.IdempotencyToken); older ones in the body.
	if t := r.URL.Query().Get("idempotency_token"); t != "" {
		args.IdempotencyToken = t
	}
	var out structs.JobDispatchResponse
	if err := h.srv.RPC("Job.Dispatch", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return out, nil
}

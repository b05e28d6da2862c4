package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// JobAllocations lists the stubs of a job's allocations; all includes
// those of earlier jobs with the same ID.
func (c *Client) JobAllocations(ctx context.Context, id string, all bool, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	q = withParam(q, "all", strconv.FormatBool(all))
	var out []*structs.AllocListStub
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(id)+"/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// JobEvaluations lists a job's evaluations.
func (c *Client) JobEvaluations(ctx context.Context, id string, q *QueryOptions) ([]*structs.Evaluation, *QueryMeta, error) {
	var out []*structs.Evaluation
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(id)+"/evaluations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// JobSummary returns a job's allocation counts per group; a missing job is
// a 404 *StatusError.
func (c *Client) JobSummary(ctx context.Context, id string, q *QueryOptions) (*structs.JobSummary, *QueryMeta, error) {
	var out structs.JobSummary
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(id)+"/summary", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// PlanJob is a dry run of registering job: what would be placed, stopped
// or updated. Nothing is written.
func (c *Client) PlanJob(ctx context.Context, job *structs.Job, diff bool, w *WriteOptions) (*structs.JobPlanResponse, *WriteMeta, error) {
	req := &structs.JobPlanHTTPRequest{Job: job, Diff: diff}
	var out structs.JobPlanResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(job.ID)+"/plan", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// PeriodicForce launches a run of periodic job id now.
func (c *Client) PeriodicForce(ctx context.Context, id string, w *WriteOptions) (*structs.PeriodicForceResponse, *WriteMeta, error) {
	var out structs.PeriodicForceResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(id)+"/periodic/force", nil, w, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// DispatchJob runs parameterized job id once with payload and meta.
func (c *Client) DispatchJob(ctx context.Context, id string, payload []byte, meta map[string]string, token string, w *WriteOptions) (*structs.JobDispatchResponse, *WriteMeta, error) {
	req := map[string]any{"JobID": id, "Payload": payload, "Meta": meta, "IdempotencyToken": token}
	var out structs.JobDispatchResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(id)+"/dispatch", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// ValidateJob checks job as registering it would, writing nothing; the
// job's problems are in the response's ValidationErrors.
func (c *Client) ValidateJob(ctx context.Context, job *structs.Job, w *WriteOptions) (*structs.JobValidateResponse, error) {
	req := &structs.JobValidateHTTPRequest{Job: job}
	var out structs.JobValidateResponse
	if _, err := c.write(ctx, http.MethodPut, "/v1/validate/job", nil, w, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// withParam returns a copy of q with one more query parameter.
func withParam(q *QueryOptions, key, value string) *QueryOptions {
	var c QueryOptions
	if q != nil {
		c = *q
	}
	params := make(map[string]string, len(c.Params)+1)
	for k, v := range c.Params {
		params[k] = v
	}
	params[key] = value
	c.Params = params
	return &c
}

// JobVersions lists a job's kept versions, newest first; with diffs, also
// each version's change from the one before it (Diffs[i] is the change
// from Versions[i+1] to Versions[i]).
func (c *Client) JobVersions(ctx context.Context, id string, diffs bool, q *QueryOptions) (*structs.JobVersionsResponse, *QueryMeta, error) {
	q = withParam(q, "diffs", strconv.FormatBool(diffs))
	var out structs.JobVersionsResponse
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(id)+"/versions", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// RevertJob registers a kept version of a job again as its newest
// version. With enforcePrior set, the job must still be at that version.
func (c *Client) RevertJob(ctx context.Context, id string, version uint64, enforcePrior *uint64, w *WriteOptions) (*structs.JobRegisterResponse, *WriteMeta, error) {
	req := &structs.JobRevertHTTPRequest{JobID: id, JobVersion: version, EnforcePriorVersion: enforcePrior}
	var out structs.JobRegisterResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(id)+"/revert", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// SetJobStability sets the Stable flag of a kept version of a job.
func (c *Client) SetJobStability(ctx context.Context, id string, version uint64, stable bool, w *WriteOptions) (*structs.JobStabilityResponse, *WriteMeta, error) {
	req := &structs.JobStabilityHTTPRequest{JobID: id, JobVersion: version, Stable: stable}
	var out structs.JobStabilityResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(id)+"/stable", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// JobScaleStatus returns a job's scaling state per group; a missing job
// is a 404 *StatusError.
func (c *Client) JobScaleStatus(ctx context.Context, id string, q *QueryOptions) (*structs.JobScaleStatus, *QueryMeta, error) {
	var out structs.JobScaleStatus
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(id)+"/scale", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// ScaleJob sets a group's count, recording message as the scaling
// event's.
func (c *Client) ScaleJob(ctx context.Context, id, group string, count int64, message string, w *WriteOptions) (*structs.JobRegisterResponse, *WriteMeta, error) {
	req := &structs.ScalingHTTPRequest{Count: &count, Message: message,
		Target: map[string]string{structs.ScalingTargetJob: id, structs.ScalingTargetGroup: group}}
	var out structs.JobRegisterResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/job/"+url.PathEscape(id)+"/scale", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

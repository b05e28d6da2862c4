package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// Deployments lists the namespace's deployments, newest first; prefix
// ("" for all) filters by ID.
func (c *Client) Deployments(ctx context.Context, prefix string, q *QueryOptions) ([]*structs.Deployment, *QueryMeta, error) {
	if prefix != "" {
		q = withParam(q, "prefix", prefix)
	}
	var out []*structs.Deployment
	qm, err := c.query(ctx, "/v1/deployments", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Deployment returns one deployment; an unknown one is a 404 *StatusError.
func (c *Client) Deployment(ctx context.Context, id string, q *QueryOptions) (*structs.Deployment, *QueryMeta, error) {
	var out structs.Deployment
	qm, err := c.query(ctx, "/v1/deployment/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// DeploymentAllocations lists a deployment's allocations.
func (c *Client) DeploymentAllocations(ctx context.Context, id string, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	qm, err := c.query(ctx, "/v1/deployment/allocations/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// JobDeployments lists a job's deployments, newest first (all: also those
// of an earlier job of the same ID).
func (c *Client) JobDeployments(ctx context.Context, jobID string, all bool, q *QueryOptions) ([]*structs.Deployment, *QueryMeta, error) {
	q = withParam(q, "all", strconv.FormatBool(all))
	var out []*structs.Deployment
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(jobID)+"/deployments", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// JobLatestDeployment returns a job's newest deployment, or nil.
func (c *Client) JobLatestDeployment(ctx context.Context, jobID string, q *QueryOptions) (*structs.Deployment, *QueryMeta, error) {
	var out *structs.Deployment
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(jobID)+"/deployment", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// deploymentChangeBody is the body of a deployment change, as Nomad's
// client sends it.
type deploymentChangeBody struct {
	DeploymentID           string
	All                    bool     `json:",omitempty"`
	Groups                 []string `json:",omitempty"`
	Pause                  bool
	HealthyAllocationIDs   []string `json:",omitempty"`
	UnhealthyAllocationIDs []string `json:",omitempty"`
}

func (c *Client) deploymentChange(ctx context.Context, verb, id string, body *deploymentChangeBody, w *WriteOptions) (*structs.DeploymentUpdateResponse, *WriteMeta, error) {
	body.DeploymentID = id
	var out structs.DeploymentUpdateResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/deployment/"+verb+"/"+url.PathEscape(id), nil, w, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// PromoteDeployment promotes the canaries of the named groups, or of all
// groups when groups is empty.
func (c *Client) PromoteDeployment(ctx context.Context, id string, groups []string, w *WriteOptions) (*structs.DeploymentUpdateResponse, *WriteMeta, error) {
	return c.deploymentChange(ctx, "promote", id, &deploymentChangeBody{All: len(groups) == 0, Groups: groups}, w)
}

// FailDeployment fails a running deployment (reverting its job with
// auto_revert).
func (c *Client) FailDeployment(ctx context.Context, id string, w *WriteOptions) (*structs.DeploymentUpdateResponse, *WriteMeta, error) {
	return c.deploymentChange(ctx, "fail", id, &deploymentChangeBody{}, w)
}

// PauseDeployment pauses (pause true) or resumes a deployment.
func (c *Client) PauseDeployment(ctx context.Context, id string, pause bool, w *WriteOptions) (*structs.DeploymentUpdateResponse, *WriteMeta, error) {
	return c.deploymentChange(ctx, "pause", id, &deploymentChangeBody{Pause: pause}, w)
}

// SetDeploymentAllocHealth sets allocations' health in a deployment.
func (c *Client) SetDeploymentAllocHealth(ctx context.Context, id string, healthy, unhealthy []string, w *WriteOptions) (*structs.DeploymentUpdateResponse, *WriteMeta, error) {
	return c.deploymentChange(ctx, "allocation-health", id, &deploymentChangeBody{HealthyAllocationIDs: healthy, UnhealthyAllocationIDs: unhealthy}, w)
}

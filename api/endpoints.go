package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// Leader returns the leader's RPC address ("" when there is none).
func (c *Client) Leader(ctx context.Context) (string, error) {
	var out string
	_, err := c.query(ctx, "/v1/status/leader", nil, &out)
	return out, err
}

// Peers returns the Raft peers' addresses.
func (c *Client) Peers(ctx context.Context) ([]string, error) {
	var out []string
	_, err := c.query(ctx, "/v1/status/peers", nil, &out)
	return out, err
}

// RaftConfiguration returns the Raft configuration.
func (c *Client) RaftConfiguration(ctx context.Context, q *QueryOptions) (*structs.RaftConfigurationResponse, error) {
	var out structs.RaftConfigurationResponse
	if _, err := c.query(ctx, "/v1/operator/raft/configuration", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// QueueStats returns the scheduling queue as the leader sees it (GET
// /v1/operator/queue, Drover's own).
func (c *Client) QueueStats(ctx context.Context, q *QueryOptions) (*structs.QueueStatsResponse, error) {
	var out structs.QueueStatsResponse
	if _, err := c.query(ctx, "/v1/operator/queue", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RaftRemovePeerByAddress removes the Raft peer at address.
func (c *Client) RaftRemovePeerByAddress(ctx context.Context, address string, w *WriteOptions) error {
	_, err := c.write(ctx, http.MethodDelete, "/v1/operator/raft/peer", url.Values{"address": {address}}, w, nil, nil)
	return err
}

// RaftRemovePeerByID removes the Raft peer with the given server ID.
func (c *Client) RaftRemovePeerByID(ctx context.Context, id string, w *WriteOptions) error {
	_, err := c.write(ctx, http.MethodDelete, "/v1/operator/raft/peer", url.Values{"id": {id}}, w, nil, nil)
	return err
}

// RaftTransferLeadershipByAddress asks the leader to hand leadership to
// the Raft peer at address.
func (c *Client) RaftTransferLeadershipByAddress(ctx context.Context, address string, w *WriteOptions) (*structs.LeadershipTransferResponse, error) {
	return c.raftTransferLeadership(ctx, url.Values{"address": {address}}, w)
}

// RaftTransferLeadershipByID asks the leader to hand leadership to the
// Raft peer with the given server ID.
func (c *Client) RaftTransferLeadershipByID(ctx context.Context, id string, w *WriteOptions) (*structs.LeadershipTransferResponse, error) {
	return c.raftTransferLeadership(ctx, url.Values{"id": {id}}, w)
}

func (c *Client) raftTransferLeadership(ctx context.Context, params url.Values, w *WriteOptions) (*structs.LeadershipTransferResponse, error) {
	var out structs.LeadershipTransferResponse
	if _, err := c.write(ctx, http.MethodPut, "/v1/operator/raft/transfer-leadership", params, w, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SchedulerConfiguration returns the scheduler configuration in force.
func (c *Client) SchedulerConfiguration(ctx context.Context, q *QueryOptions) (*structs.SchedulerConfigurationResponse, error) {
	var out structs.SchedulerConfigurationResponse
	if _, err := c.query(ctx, "/v1/operator/scheduler/configuration", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SchedulerCASConfiguration writes conf only if the stored configuration's
// ModifyIndex is conf.ModifyIndex; Updated says whether it was written.
func (c *Client) SchedulerCASConfiguration(ctx context.Context, conf *structs.SchedulerConfiguration, w *WriteOptions) (*structs.SchedulerSetConfigurationResponse, error) {
	var out structs.SchedulerSetConfigurationResponse
	params := url.Values{"cas": {strconv.FormatUint(conf.ModifyIndex, 10)}}
	if _, err := c.write(ctx, http.MethodPut, "/v1/operator/scheduler/configuration", params, w, conf, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RegisterOptions make a registration conditional.
type RegisterOptions struct {
	// EnforceIndex: register only if the job's JobModifyIndex equals
	// ModifyIndex (0: only if the job does not exist).
	EnforceIndex bool
	ModifyIndex  uint64
}

// RegisterJob registers or updates job. opts may be nil.
func (c *Client) RegisterJob(ctx context.Context, job *structs.Job, opts *RegisterOptions, w *WriteOptions) (*structs.JobRegisterResponse, *WriteMeta, error) {
	req := &structs.JobRegisterHTTPRequest{Job: job}
	if opts != nil && opts.EnforceIndex {
		req.EnforceIndex = true
		req.JobModifyIndex = opts.ModifyIndex
	}
	var out structs.JobRegisterResponse
	wm, err := c.write(ctx, http.MethodPut, "/v1/jobs", nil, w, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Job returns one job; a missing job is a 404 *StatusError (IsNotFound).
func (c *Client) Job(ctx context.Context, id string, q *QueryOptions) (*structs.Job, *QueryMeta, error) {
	var out structs.Job
	qm, err := c.query(ctx, "/v1/job/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Jobs lists jobs (q.Prefix filters by ID prefix).
func (c *Client) Jobs(ctx context.Context, q *QueryOptions) ([]*structs.JobListStub, *QueryMeta, error) {
	var out []*structs.JobListStub
	qm, err := c.query(ctx, "/v1/jobs", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// DeregisterJob stops a job, or removes it when purge is set.
func (c *Client) DeregisterJob(ctx context.Context, id string, purge bool, w *WriteOptions) (*structs.JobDeregisterResponse, *WriteMeta, error) {
	var out structs.JobDeregisterResponse
	params := url.Values{"purge": {strconv.FormatBool(purge)}}
	wm, err := c.write(ctx, http.MethodDelete, "/v1/job/"+url.PathEscape(id), params, w, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Nodes lists nodes (q.Prefix filters by ID prefix).
func (c *Client) Nodes(ctx context.Context, q *QueryOptions) ([]*structs.NodeListStub, *QueryMeta, error) {
	var out []*structs.NodeListStub
	qm, err := c.query(ctx, "/v1/nodes", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Node returns one node; a missing node is a 404 *StatusError.
func (c *Client) Node(ctx context.Context, id string, q *QueryOptions) (*structs.Node, *QueryMeta, error) {
	var out structs.Node
	qm, err := c.query(ctx, "/v1/node/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Eval returns one evaluation; a missing one is a 404 *StatusError.
func (c *Client) Eval(ctx context.Context, id string, q *QueryOptions) (*structs.Evaluation, *QueryMeta, error) {
	var out structs.Evaluation
	qm, err := c.query(ctx, "/v1/evaluation/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// AgentSelf returns the agent's configuration and identity.
func (c *Client) AgentSelf(ctx context.Context) (*structs.AgentSelf, error) {
	var out structs.AgentSelf
	if _, err := c.query(ctx, "/v1/agent/self", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AgentMembers returns the servers the agent knows.
func (c *Client) AgentMembers(ctx context.Context) (*structs.AgentMembersResponse, error) {
	var out structs.AgentMembersResponse
	if _, err := c.query(ctx, "/v1/agent/members", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AgentHealth returns the agent's health. An unhealthy agent answers 500
// with the same body; that is returned together with a *StatusError.
func (c *Client) AgentHealth(ctx context.Context) (*structs.AgentHealthResponse, error) {
	var out structs.AgentHealthResponse
	_, err := c.query(ctx, "/v1/agent/health", nil, &out)
	var se *StatusError
	if errors.As(err, &se) {
		if json.Unmarshal([]byte(se.Body), &out) != nil {
			return nil, err
		}
		return &out, err
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

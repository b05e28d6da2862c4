package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/drover-project/drover/structs"
)

// Services lists the service names per namespace (q.Namespace "*" for
// every namespace), each with its instances' tags.
func (c *Client) Services(ctx context.Context, q *QueryOptions) ([]*structs.ServiceRegistrationListStub, *QueryMeta, error) {
	var out []*structs.ServiceRegistrationListStub
	qm, err := c.query(ctx, "/v1/services", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Service returns the registrations of one service (q.Params "tag" and
// "choose" filter as Nomad's do).
func (c *Client) Service(ctx context.Context, name string, q *QueryOptions) ([]*structs.ServiceRegistration, *QueryMeta, error) {
	var out []*structs.ServiceRegistration
	qm, err := c.query(ctx, "/v1/service/"+url.PathEscape(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// DeleteService removes one registration of a service.
func (c *Client) DeleteService(ctx context.Context, name, id string, w *WriteOptions) (*WriteMeta, error) {
	return c.write(ctx, http.MethodDelete, "/v1/service/"+url.PathEscape(name)+"/"+url.PathEscape(id), nil, w, nil, nil)
}

// AllocChecks returns the latest result of each of an allocation's
// health checks, by check ID (Nomad's /v1/client/allocation/<id>/checks).
func (c *Client) AllocChecks(ctx context.Context, allocID string, q *QueryOptions) (map[string]*structs.CheckQueryResult, error) {
	var out map[string]*structs.CheckQueryResult
	if _, err := c.query(ctx, "/v1/client/allocation/"+url.PathEscape(allocID)+"/checks", q, &out); err != nil {
		return nil, err
	}
	return out, nil
}

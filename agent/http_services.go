package agent

import (
	"errors"
	"net/http"
	"slices"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/structs"
)

// Native service discovery: Nomad's /v1/services, /v1/service/<name>,
// /v1/job/<id>/services and /v1/allocation/<id>/services, each a blocking
// query.

// GET /v1/services: per namespace, each service name with the union of
// its instances' tags.
func (h *httpAPI) serviceList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.ServiceRegistrationListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.ServiceRegistrationListResponse
	if err := h.srv.RPC("ServiceRegistration.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return out.Services, nil
}

// GET /v1/service/<name>[?tag=...&choose=<n>|<key>]: the service's
// registrations; each ?tag= must be among an instance's tags; choose
// keeps n instances, stable per key.
func (h *httpAPI) serviceGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ServiceRegistrationByNameRequest{ServiceName: r.PathValue("name"), Choose: r.URL.Query().Get("choose")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.ServiceRegistrationByNameResponse
	if err := h.srv.RPC("ServiceRegistration.GetService", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return withTags(out.Services, r.URL.Query()["tag"]), nil
}

// withTags keeps the registrations holding every tag of tags.
func withTags(regs []*structs.ServiceRegistration, tags []string) []*structs.ServiceRegistration {
	if len(tags) == 0 {
		return regs
	}
	out := make([]*structs.ServiceRegistration, 0, len(regs))
	for _, reg := range regs {
		all := true
		for _, t := range tags {
			if !slices.Contains(reg.Tags, t) {
				all = false
				break
			}
		}
		if all {
			out = append(out, reg)
		}
	}
	return out
}

// DELETE /v1/service/<name>/<id>: remove one registration (its client
// registers it again while the allocation runs, as in Nomad).
func (h *httpAPI) serviceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.ServiceRegistrationDeleteByIDRequest{ID: r.PathValue("id")}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.GenericResponse
	if err := h.srv.RPC("ServiceRegistration.DeleteByID", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

// GET /v1/job/<id>/services: the job's registrations; 404 when the job
// does not exist.
func (h *httpAPI) jobServices(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobServiceRegistrationsRequest{JobID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.JobServiceRegistrationsResponse
	if err := h.srv.RPC("Job.GetServiceRegistrations", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Services == nil {
		return nil, notFound("job not found")
	}
	return out.Services, nil
}

// GET /v1/allocation/<id>/services: the allocation's registrations; 404
// when the allocation does not exist.
func (h *httpAPI) allocServices(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.AllocServiceRegistrationsRequest{AllocID: r.PathValue("id")}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.AllocServiceRegistrationsResponse
	if err := h.srv.RPC("Alloc.GetServiceRegistrations", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Services == nil {
		return nil, notFound("alloc not found")
	}
	return out.Services, nil
}

// checksClient is the local client's view of its allocations' checks
// (*client.Client has it).
type checksClient interface {
	AllocChecks(allocID string) (map[string]*structs.CheckQueryResult, error)
}

// GET /v1/client/allocation/<id>/checks and /v1/allocation/<id>/checks:
// the latest result of each health check of the allocation, by check ID,
// from the client running it (another agent's request is passed to that
// node's agent, once, as task logs are).
func (h *httpAPI) allocChecks(w http.ResponseWriter, r *http.Request) (any, error) {
	allocID := r.PathValue("id")
	if err := h.authorizeAllocRead(r, allocID); err != nil {
		return nil, err
	}
	var localErr error = structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this agent, which runs no client", allocID)
	if cc, ok := h.client.(checksClient); ok && h.client != nil {
		out, err := cc.AllocChecks(allocID)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, structs.ErrNotFound) {
			return nil, err
		}
		localErr = err
	}
	if r.Header.Get(logsProxiedHeader) != "" {
		return nil, localErr
	}
	var secret string
	if h.cfg.ACL.Enabled {
		secret = requestSecret(r)
	}
	target, err := h.allocNodeURL(allocID, secret)
	if err != nil {
		return nil, err
	}
	if target == nil {
		return nil, localErr
	}
	h.proxyLogs(w, r, target, false)
	return nil, nil
}

// authorizeAllocRead checks read-job in the allocation's namespace.
func (h *httpAPI) authorizeAllocRead(r *http.Request, allocID string) error {
	if !h.cfg.ACL.Enabled {
		return nil
	}
	a, err := h.resolveACL(requestSecret(r))
	if err != nil {
		return err
	}
	var ar structs.SingleAllocResponse
	args := structs.AllocSpecificRequest{AllocID: allocID, QueryOptions: structs.QueryOptions{AllowStale: true, AuthToken: requestSecret(r)}}
	if err := h.srv.RPC("Alloc.GetAlloc", &args, &ar); err != nil {
		return err
	}
	if ar.Alloc == nil {
		return structs.NewError(structs.ErrCodeNotFound, "allocation %q not found", allocID)
	}
	if !a.AllowNamespaceOperation(ar.Alloc.Namespace, acl.NamespaceCapabilityReadJob) {
		return structs.ErrPermissionDenied
	}
	return nil
}

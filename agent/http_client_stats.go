package agent

import (
	"context"
	"errors"
	"net/http"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

// StatsClient is a LocalClient that reports resource usage;
// *client.Client satisfies it.
type StatsClient interface {
	AllocStats(ctx context.Context, allocID string) (*driver.AllocResourceUsage, error)
	HostStats() (*client.HostStats, error)
}

// GET /v1/client/allocation/<id>/stats: the allocation's resource usage,
// Nomad's api.AllocResourceUsage, from the client running it. Any agent
// answers, proxying (once) to the allocation's node as the log endpoint
// does. ACL: read-job in the allocation's namespace.
func (h *httpAPI) clientAllocStats(w http.ResponseWriter, r *http.Request) (any, error) {
	allocID := r.PathValue("id")
	if err := h.authorizeAlloc(r, allocID, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, err
	}
	var localErr error = structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this agent, which runs no client", allocID)
	if sc, ok := h.client.(StatsClient); ok {
		u, err := sc.AllocStats(r.Context(), allocID)
		if err == nil {
			return u, nil
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

// GET /v1/client/stats[?node_id=<id>]: the node's resource usage, Nomad's
// api.HostStats: this agent's own client, or (node_id naming another
// node) that node's, proxied once. ACL: node:read.
func (h *httpAPI) clientHostStats(w http.ResponseWriter, r *http.Request) (any, error) {
	if h.cfg.ACL.Enabled {
		a, err := h.resolveACL(requestSecret(r))
		if err != nil {
			return nil, err
		}
		if !a.AllowNodeRead() {
			return nil, structs.ErrPermissionDenied
		}
	}
	nodeID := r.URL.Query().Get("node_id")
	sc, ok := h.client.(StatsClient)
	if ok && (nodeID == "" || nodeID == h.client.NodeID()) {
		return sc.HostStats()
	}
	if nodeID == "" || r.Header.Get(logsProxiedHeader) != "" {
		return nil, structs.NewError(structs.ErrCodeNotFound, "this agent runs no client; give ?node_id=<node>")
	}
	var nr structs.SingleNodeResponse
	args := structs.NodeSpecificRequest{NodeID: nodeID, QueryOptions: structs.QueryOptions{AllowStale: true, AuthToken: requestSecret(r)}}
	if err := h.srv.RPC("Node.GetNode", &args, &nr); err != nil {
		return nil, err
	}
	if nr.Node == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "node %q not found", nodeID)
	}
	target, err := nodeHTTPURL(nr.Node)
	if err != nil {
		return nil, err
	}
	h.proxyLogs(w, r, target, false)
	return nil, nil
}

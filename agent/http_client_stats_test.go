package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

// statsClient is a routeClient that also reports usage for its
// allocation (if any) and its node.
type statsClient struct {
	routeClient
	alloc string
}

func (c *statsClient) AllocStats(_ context.Context, allocID string) (*driver.AllocResourceUsage, error) {
	if allocID != c.alloc {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this client", allocID)
	}
	return &driver.AllocResourceUsage{Tasks: map[string]*driver.TaskResourceUsage{"t": {
		ResourceUsage: &driver.ResourceUsage{MemoryStats: &driver.MemoryStats{RSS: 4096}}}}}, nil
}

func (c *statsClient) HostStats() (*client.HostStats, error) {
	return &client.HostStats{Memory: &client.HostMemoryStats{Total: 1 << 30}, Uptime: 7}, nil
}

// TestHTTPClientStatsRouting: an agent without the allocation (or the
// node) passes a stats request on, once, to the node that has it.
func TestHTTPClientStatsRouting(t *testing.T) {
	backend := newBackend(t, &statsClient{routeClient{node: "node-b"}, "a1"})
	backendAddr := strings.TrimPrefix(backend.URL, "http://")
	front := NewHTTPHandler(routingServers(backendAddr), DefaultConfig(), hclog.NewNullLogger(),
		WithLocalClient(&statsClient{routeClient{node: "node-a"}, ""}))

	rec := do(t, front, "GET", "/v1/client/allocation/a1/stats", "")
	var u driver.AllocResourceUsage
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &u) != nil || u.Tasks["t"].ResourceUsage.MemoryStats.RSS != 4096 {
		t.Fatalf("proxied alloc stats: %d %s", rec.Code, rec.Body)
	}
	if hits, via := backend.seen(); hits != 1 || via == "" {
		t.Fatalf("backend saw %d requests, proxy header %q", hits, via)
	}
	rec = do(t, front, "GET", "/v1/client/stats?node_id=node-b", "")
	var hs client.HostStats
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &hs) != nil || hs.Uptime != 7 {
		t.Fatalf("proxied host stats: %d %s", rec.Code, rec.Body)
	}
	// The agent's own node needs no node_id; an allocation on its own node
	// that its client does not know is a 404, not a loop.
	if rec = do(t, front, "GET", "/v1/client/stats", ""); rec.Code != 200 {
		t.Fatalf("own host stats: %d %s", rec.Code, rec.Body)
	}
	if rec = do(t, front, "GET", "/v1/client/allocation/home/stats", ""); rec.Code != 404 {
		t.Fatalf("unknown local allocation: %d %s", rec.Code, rec.Body)
	}
}

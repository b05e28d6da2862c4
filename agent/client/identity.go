package client

import (
	"sync"

	"github.com/drover-project/drover/structs"
)

// Workload identities: a token per task of an allocation this client
// runs, signed by the servers (RPC Alloc.SignIdentities, authenticated by
// the node's secret, for allocations on this node only). The token
// reads the task's job's variables (nomad/jobs/<job>[/<group>[/<task>]])
// and the services of its namespace through the HTTP API, as Nomad's
// implicit policy allows. The task runner writes it to the task's
// secrets/nomad_token and NOMAD_TOKEN when the task's identity block asks;
// templates get it from WorkloadToken.

// identityCache keeps the tokens this client has fetched, by allocation
// and task, until the allocation is collected.
type identityCache struct {
	mu     sync.Mutex
	tokens map[string]map[string]string // alloc ID -> task -> token; guarded by mu
}

func (ic *identityCache) get(allocID, task string) (string, bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	t, ok := ic.tokens[allocID][task]
	return t, ok
}

func (ic *identityCache) put(allocID, task, token string) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.tokens == nil {
		ic.tokens = map[string]map[string]string{}
	}
	if ic.tokens[allocID] == nil {
		ic.tokens[allocID] = map[string]string{}
	}
	ic.tokens[allocID][task] = token
}

func (ic *identityCache) forget(allocID string) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	delete(ic.tokens, allocID)
}

// WorkloadToken returns the workload identity token of task in the
// allocation allocID, which this client must run: a bearer token for
// Drover's (Nomad's) HTTP API (X-Nomad-Token) that reads the variables
// of the task's job and the services of its namespace. It is fetched from
// the servers on first use and kept until the allocation is collected;
// it stops working once the allocation has finished. Safe for concurrent
// use. Errors: not_found for an allocation or task this client does not
// run; the servers' error otherwise.
func (c *Client) WorkloadToken(allocID, task string) (string, error) {
	if tok, ok := c.identities.get(allocID, task); ok {
		return tok, nil
	}
	if c.runner(allocID) == nil {
		return "", structs.NewError(structs.ErrCodeNotFound, "allocation %q is not running on this client", allocID)
	}
	return c.signIdentity(allocID, task)
}

// signIdentity asks the servers for a task's token and caches it.
func (c *Client) signIdentity(allocID, task string) (string, error) {
	id, secret := c.nodeIdentity()
	req := &structs.AllocIdentitiesRequest{NodeID: id, SecretID: secret, AllocID: allocID, Tasks: []string{task},
		QueryOptions: structs.QueryOptions{Region: c.cfg.Region, AuthToken: secret}}
	var resp structs.AllocIdentitiesResponse
	if err := c.RPC("Alloc.SignIdentities", req, &resp); err != nil {
		return "", err
	}
	if len(resp.Identities) != 1 || resp.Identities[0] == nil || resp.Identities[0].Task != task {
		return "", structs.NewError(structs.ErrCodeInternal, "the servers answered no identity for task %q", task)
	}
	tok := resp.Identities[0].JWT
	c.identities.put(allocID, task, tok)
	return tok, nil
}

// templateToken is where tasks' templates get their token: the
// configured source, else the task's workload identity.
func (c *Client) templateToken() func(allocID, task string) (string, error) {
	if c.cfg.TemplateToken != nil {
		return c.cfg.TemplateToken
	}
	return c.signIdentity
}

package agent

import (
	"net"
	"net/http"
	"strconv"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/version"
)

// GET /v1/agent/self: this agent's configuration and identity, in Nomad's
// shape (the "config" keys Nomad's client reads: Region, Datacenter).
func (h *httpAPI) agentSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	c := h.cfg
	rpcAddr := h.srv.RPCAddr()
	cfg := map[string]any{
		"Region":      c.Region,
		"Datacenter":  c.Datacenter,
		"NodeName":    c.NodeNameOrHost(),
		"DataDir":     c.DataDir,
		"BindAddr":    c.BindAddr,
		"DevMode":     c.DevMode,
		"LogLevel":    c.LogLevel,
		"EnableDebug": c.EnableDebug,
		"Ports":       map[string]int{"HTTP": c.Ports.HTTP, "RPC": c.Ports.RPC},
		"Server": map[string]any{
			"Enabled":         c.Server.Enabled,
			"BootstrapExpect": c.Server.BootstrapExpect,
			"NumSchedulers":   c.Server.NumSchedulers,
			"RetryJoin":       c.Server.RetryJoin,
		},
		"Client":  map[string]any{"Enabled": c.Client.Enabled},
		"Version": map[string]string{"Version": version.Version, "Revision": version.GitCommit},
	}
	leader := h.srv.Leader()
	self := &structs.AgentSelf{
		Config: cfg,
		Member: *memberFromServer(&structs.ServerMember{
			Name: c.NodeNameOrHost(), RPCAddr: rpcAddr, Region: c.Region,
			Datacenter: c.Datacenter, Status: "alive", Leader: leader != "" && leader == rpcAddr,
			Bootstrap: c.Server.BootstrapExpect, Version: version.Version,
		}),
		Stats: map[string]map[string]string{
			"raft": {"leader": strconv.FormatBool(h.srv.IsLeader()), "leader_addr": leader},
		},
	}
	if h.client != nil {
		self.Stats["client"] = map[string]string{"node_id": h.client.NodeID()}
	}
	return self, nil
}

// GET /v1/agent/health: 200 when the server knows a leader, else 500, with
// the JSON body Nomad's client decodes either way.
func (h *httpAPI) agentHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	args.Region = h.cfg.Region
	var leader string
	resp := &structs.AgentHealthResponse{Server: &structs.AgentHealth{Ok: true, Message: "ok"}}
	err := h.srv.RPC("Status.Leader", &args, &leader)
	switch {
	case err != nil:
		_, msg := errorResponse(err)
		resp.Server = &structs.AgentHealth{Message: msg}
	case leader == "":
		resp.Server = &structs.AgentHealth{Message: structs.ErrNoLeader.Message}
	}
	if !resp.Server.Ok {
		return withStatus{code: http.StatusInternalServerError, body: resp}, nil
	}
	return resp, nil
}

// GET /v1/agent/members: the servers this one knows.
func (h *httpAPI) agentMembers(w http.ResponseWriter, r *http.Request) (any, error) {
	out := &structs.AgentMembersResponse{
		ServerName:   h.cfg.NodeNameOrHost(),
		ServerRegion: h.cfg.Region,
		ServerDC:     h.cfg.Datacenter,
		Members:      []*structs.AgentMember{},
	}
	for _, m := range h.srv.Members() {
		out.Members = append(out.Members, memberFromServer(m))
	}
	return out, nil
}

// memberFromServer renders a server as Nomad's agent member, with the
// tags Nomad's servers gossip: Nomad's CLI finds the leader by comparing
// /v1/status/leader with Addr joined to the "port" tag (the RPC port),
// and prints "raft_vsn", "build", "dc" and "region". "bootstrap" is "1"
// only for a single-server cluster and "expect" is bootstrap_expect, as
// in Nomad; "leader" and the host:port "rpc_addr" are Drover's own.
func memberFromServer(m *structs.ServerMember) *structs.AgentMember {
	host, portStr, err := net.SplitHostPort(m.RPCAddr)
	if err != nil {
		host = m.RPCAddr
	}
	port, _ := strconv.ParseUint(portStr, 10, 16)
	tags := map[string]string{
		"role":     "drover",
		"region":   m.Region,
		"dc":       m.Datacenter,
		"id":       m.ID,
		"rpc_addr": m.RPCAddr,
		"port":     portStr,
		"build":    m.Version,
		"vsn":      memberAPIVersion,
		"raft_vsn": memberRaftVersion,
		"leader":   strconv.FormatBool(m.Leader),
	}
	if m.Bootstrap == 1 {
		tags["bootstrap"] = "1"
	}
	if m.Bootstrap != 0 {
		tags["expect"] = strconv.Itoa(m.Bootstrap)
	}
	return &structs.AgentMember{
		Name:   m.Name + "." + m.Region,
		Addr:   host,
		Port:   uint16(port),
		Tags:   tags,
		Status: m.Status,
	}
}

// Versions a member's tags report: the API major version Nomad's servers
// gossip as "vsn", and the Raft protocol Drover's servers speak.
const (
	memberAPIVersion  = "1"
	memberRaftVersion = "3"
)

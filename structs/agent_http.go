package structs

// Types that exist only on the HTTP boundary between the agent and its Go
// client (package api). Their JSON shapes follow Nomad's HTTP API so that
// Nomad's own client can decode them.

// JobRegisterHTTPRequest is the body of PUT|POST /v1/jobs and
// PUT|POST /v1/job/<id>. Fields Nomad sends that Drover does not model are
// ignored on decode.
type JobRegisterHTTPRequest struct {
	Job *Job
	// EnforceIndex makes the write conditional on JobModifyIndex.
	EnforceIndex   bool
	JobModifyIndex uint64
}

// AgentSelf answers GET /v1/agent/self.
type AgentSelf struct {
	Config map[string]any               `json:"config"`
	Member AgentMember                  `json:"member"`
	Stats  map[string]map[string]string `json:"stats"`
}

// AgentMember describes one server agent (Nomad's serf member shape).
type AgentMember struct {
	Name   string
	Addr   string
	Port   uint16
	Tags   map[string]string
	Status string
}

// AgentMembersResponse answers GET /v1/agent/members.
type AgentMembersResponse struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*AgentMember
}

// AgentHealthResponse answers GET /v1/agent/health; a nil part is not
// running on this agent.
type AgentHealthResponse struct {
	Client *AgentHealth `json:"client,omitempty"`
	Server *AgentHealth `json:"server,omitempty"`
}

// AgentHealth is the health of one part of the agent.
type AgentHealth struct {
	Ok      bool   `json:"ok"`
	Message string `json:"message"`
}

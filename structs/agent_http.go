package structs

import "encoding/json"

// Types that exist only on the HTTP boundary between the agent and its Go
// client (package api). Their JSON shapes follow Nomad's HTTP API so that
// Nomad's own client can decode them.

// JobRegisterHTTPRequest is the body of PUT|POST /v1/jobs and
// PUT|POST /v1/job/<id> (Nomad's JobRegisterRequest). It is decoded by
// jobspec.DecodeAPIRequest: a field of Nomad's request that is not here
// and is not empty (PreserveCounts, PreserveResources, EvalPriority) is
// refused by name.
type JobRegisterHTTPRequest struct {
	Job *Job
	// EnforceIndex makes the write conditional on JobModifyIndex.
	EnforceIndex   bool
	JobModifyIndex uint64
	// PolicyOverride overrides Sentinel soft-mandatory policies. Drover
	// has none (nor has Nomad's community edition), so it changes nothing.
	PolicyOverride bool
	// Submission is the job's source, which Nomad's CLI sends with every
	// job run. Drover does not keep it: GET /v1/job/<id>/submission
	// answers 501. It never changes what runs.
	Submission json.RawMessage
	// Region, Namespace and SecretID are Nomad's WriteRequest, embedded
	// in the body; the query string's region and namespace take their
	// place when they are empty. SecretID is unused (no ACLs yet).
	Region    string
	Namespace string
	SecretID  string
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

package structs

import "time"

// HTTP request and response bodies of the user surface (jobs, nodes,
// allocations) whose shape is Nomad's rather than an RPC type's. Nomad's
// Go client encodes and decodes these; unknown fields are ignored on
// decode.

// JobPlanHTTPRequest is the body of PUT|POST /v1/job/<id>/plan, decoded
// by jobspec.DecodeAPIRequest as JobRegisterHTTPRequest is.
type JobPlanHTTPRequest struct {
	Job  *Job
	Diff bool
	// PolicyOverride is accepted for Nomad's client and changes nothing
	// (Drover has no Sentinel policies).
	PolicyOverride bool
	// Region, Namespace and SecretID: see JobRegisterHTTPRequest.
	Region    string
	Namespace string
	SecretID  string
}

// JobValidateHTTPRequest is the body of PUT|POST /v1/validate/job,
// decoded by jobspec.DecodeAPIRequest as JobRegisterHTTPRequest is.
type JobValidateHTTPRequest struct {
	Job *Job
	// Region, Namespace and SecretID: see JobRegisterHTTPRequest.
	Region    string
	Namespace string
	SecretID  string
}

// JobsParseHTTPRequest is the body of PUT|POST /v1/jobs/parse: an HCL job
// file to turn into the API's JSON job.
type JobsParseHTTPRequest struct {
	JobHCL string
	// Variables is the text of a variable file (name = value lines).
	Variables string
	// HCLv1 asks for the old HCL dialect, which Drover does not read.
	HCLv1        bool `json:"hclv1,omitempty"`
	Canonicalize bool
}

// DrainSpec is how a node drain is requested over HTTP. Deadline 0 means
// no deadline; a negative one forces the drain at once (as in Nomad).
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// NodeDrainHTTPRequest is the body of PUT|POST /v1/node/<id>/drain. A nil
// DrainSpec ends the drain; MarkEligible then makes the node eligible.
type NodeDrainHTTPRequest struct {
	NodeID       string
	DrainSpec    *DrainSpec
	MarkEligible bool
	Meta         map[string]string
}

// NodeEligibilityHTTPRequest is the body of PUT|POST
// /v1/node/<id>/eligibility: Eligibility is "eligible" or "ineligible".
type NodeEligibilityHTTPRequest struct {
	NodeID      string
	Eligibility string
}

// NodeUpdateHTTPResponse answers the node drain and eligibility writes
// (Nomad's NodeDrainUpdateResponse and NodeEligibilityUpdateResponse).
type NodeUpdateHTTPResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
}

// JobRevertHTTPRequest is the body of PUT|POST /v1/job/<id>/revert
// (Nomad's JobRevertRequest).
type JobRevertHTTPRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	ConsulToken         string
	VaultToken          string
	// Region, Namespace and SecretID: see JobRegisterHTTPRequest.
	Region    string
	Namespace string
	SecretID  string
}

// JobStabilityHTTPRequest is the body of PUT|POST /v1/job/<id>/stable
// (Nomad's JobStabilityRequest).
type JobStabilityHTTPRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	// Region, Namespace and SecretID: see JobRegisterHTTPRequest.
	Region    string
	Namespace string
	SecretID  string
}

// ScalingHTTPRequest is the body of PUT|POST /v1/job/<id>/scale (Nomad's
// ScalingRequest).
type ScalingHTTPRequest struct {
	Count          *int64
	Target         map[string]string
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool
	JobModifyIndex uint64
	// Region, Namespace and SecretID: see JobRegisterHTTPRequest.
	Region    string
	Namespace string
	SecretID  string
}

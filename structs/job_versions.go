package structs

// Job versions: the servers keep the last JobTrackedVersions versions of
// each job (state's job_version table). A revert registers an old version
// as a new one; Stable marks a version as known good.

// JobVersionsRequest lists a job's kept versions, newest first; with
// Diffs, each version's difference from the one before it too.
type JobVersionsRequest struct {
	JobID string
	Diffs bool
	QueryOptions
}

// JobVersionsResponse answers JobVersionsRequest. Diffs[i] is the change
// from Versions[i+1] to Versions[i] (one fewer than the versions).
type JobVersionsResponse struct {
	Versions []*Job
	Diffs    []*JobDiff
	QueryMeta
}

// JobRevertRequest registers a kept version of a job again, as a new
// version. With EnforcePriorVersion set, the current version must be
// that one (check-and-set), or the request fails with code conflict.
type JobRevertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	// ConsulToken and VaultToken are Nomad's; Drover has no Consul or
	// Vault integration and refuses a non-empty one.
	ConsulToken string
	VaultToken  string
	WriteRequest
}

// JobStabilityRequest sets the Stable flag of one kept version of a job.
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	WriteRequest
}

// JobStabilityResponse answers JobStabilityRequest.
type JobStabilityResponse struct {
	JobModifyIndex uint64
	WriteMeta
}

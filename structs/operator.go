package structs

// SnapshotSaveResponse carries an operator snapshot archive (see
// fsm.WriteArchive) of the whole state, taken on the leader.
type SnapshotSaveResponse struct {
	Archive []byte
	QueryMeta
}

// SnapshotUploadChunkBytes bounds the data of one SnapshotUploadRequest.
const SnapshotUploadChunkBytes = 8 << 20

// SnapshotUploadRequest sends the leader one chunk of an operator snapshot
// archive to restore: UploadID "" starts an upload (Offset 0); later
// chunks name it and carry the next Offset (the bytes sent so far).
type SnapshotUploadRequest struct {
	UploadID string
	Offset   int64
	Data     []byte
	WriteRequest
}

// SnapshotUploadResponse names the upload and the bytes it holds.
type SnapshotUploadResponse struct {
	UploadID string
	Size     int64
	WriteMeta
}

// SnapshotRestoreRequest restores the uploaded archive UploadID into the
// cluster through Raft, so every server converges on it.
type SnapshotRestoreRequest struct {
	UploadID string
	WriteRequest
}

// SchedulerAlgorithm is how the scheduler scores nodes that fit.
type SchedulerAlgorithm string

const (
	// SchedulerAlgorithmBinpack prefers the fullest node (the default).
	SchedulerAlgorithmBinpack SchedulerAlgorithm = "binpack"
	// SchedulerAlgorithmSpread prefers the emptiest node.
	SchedulerAlgorithmSpread SchedulerAlgorithm = "spread"
)

// SchedulerConfiguration is the cluster's scheduler configuration, kept in
// the replicated state (one row) in Nomad's shape. Until an operator sets
// one, the state answers DefaultSchedulerConfiguration (indexes 0).
type SchedulerConfiguration struct {
	// SchedulerAlgorithm is binpack (also for "") or spread.
	SchedulerAlgorithm SchedulerAlgorithm
	// PreemptionConfig says, per scheduler, whether a placement that fits
	// nowhere may evict allocations of lower-priority jobs.
	PreemptionConfig PreemptionConfig
	// MemoryOversubscriptionEnabled, RejectJobRegistration and
	// PauseEvalBroker are Nomad's; Drover refuses true for each (see
	// Validate). NodeLimitForFeasibilityChecks must be 0.
	MemoryOversubscriptionEnabled bool
	RejectJobRegistration         bool
	PauseEvalBroker               bool
	NodeLimitForFeasibilityChecks uint
	CreateIndex                   uint64
	ModifyIndex                   uint64
}

// PreemptionConfig enables preemption per scheduler type.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// DefaultSchedulerConfiguration is Nomad's default: binpack, preemption
// for system jobs only.
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig: PreemptionConfig{SystemSchedulerEnabled: true}}
}

// EffectiveAlgorithm is the algorithm in force ("" is binpack).
func (c *SchedulerConfiguration) EffectiveAlgorithm() SchedulerAlgorithm {
	if c == nil || c.SchedulerAlgorithm == "" {
		return SchedulerAlgorithmBinpack
	}
	return c.SchedulerAlgorithm
}

// PreemptionEnabled reports whether jobs of jobType may preempt.
func (c *SchedulerConfiguration) PreemptionEnabled(jobType string) bool {
	if c == nil {
		c = DefaultSchedulerConfiguration()
	}
	switch jobType {
	case JobTypeService:
		return c.PreemptionConfig.ServiceSchedulerEnabled
	case JobTypeBatch:
		return c.PreemptionConfig.BatchSchedulerEnabled
	case JobTypeSystem:
		return c.PreemptionConfig.SystemSchedulerEnabled
	case JobTypeSysBatch:
		return c.PreemptionConfig.SysBatchSchedulerEnabled
	}
	return false
}

// Validate checks a configuration an operator sends: a known algorithm,
// and none of the Nomad settings Drover does not implement.
func (c *SchedulerConfiguration) Validate() error {
	var errs []FieldError
	switch c.SchedulerAlgorithm {
	case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
	default:
		errs = append(errs, FieldError{Field: "SchedulerAlgorithm",
			Message: "invalid scheduler algorithm " + string(c.SchedulerAlgorithm) + ` (want "binpack" or "spread")`})
	}
	refuse := func(set bool, field, what string) {
		if set {
			errs = append(errs, FieldError{Field: field, Message: "Drover does not support " + what})
		}
	}
	refuse(c.MemoryOversubscriptionEnabled, "MemoryOversubscriptionEnabled", "memory oversubscription")
	refuse(c.RejectJobRegistration, "RejectJobRegistration", "rejecting job registration by scheduler configuration")
	refuse(c.PauseEvalBroker, "PauseEvalBroker", "pausing the evaluation broker")
	refuse(c.NodeLimitForFeasibilityChecks != 0, "NodeLimitForFeasibilityChecks", "a node limit for feasibility checks")
	if len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}

// SchedulerSetConfigRequest sets the scheduler configuration; with CAS,
// only if the stored ModifyIndex equals Config.ModifyIndex (0: none was
// ever set).
type SchedulerSetConfigRequest struct {
	Config SchedulerConfiguration
	CAS    bool
	WriteRequest
}

// SchedulerConfigurationResponse is the configuration in force.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration
	QueryMeta
}

// SchedulerSetConfigurationResponse says whether a set was applied
// (always true without CAS).
type SchedulerSetConfigurationResponse struct {
	Updated bool
	WriteMeta
}

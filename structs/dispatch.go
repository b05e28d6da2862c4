package structs

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Payload requirements of a parameterized job, as in Nomad.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// DispatchLaunchSuffix joins a parameterized job's ID and the dispatch in
// the IDs of its children: "<id>/dispatch-<unix seconds>-<8 hex>".
const DispatchLaunchSuffix = "/dispatch-"

// DispatchPayloadSizeLimit caps a dispatch payload (Nomad's 16 KiB).
const DispatchPayloadSizeLimit = 16 * 1024

// ParameterizedJobConfig makes a batch job a template that runs only when
// dispatched, with a payload and meta (Nomad's parameterized block).
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// DispatchPayloadConfig names the file, under the task's local/
// directory, that the client writes a dispatched job's payload to.
type DispatchPayloadConfig struct {
	File string
}

// IsParameterized reports whether the job has a parameterized block (and
// is not itself a dispatched child).
func (j *Job) IsParameterized() bool { return j != nil && j.ParameterizedJob != nil && !j.Dispatched }

// DispatchedID is the ID of a child of parameterized job id dispatched at
// t, as Nomad forms it: "<id>/dispatch-[<prefix>-]<unix>-<suffix>", where
// suffix is 8 hex characters that make it unique.
func DispatchedID(id, prefix string, t time.Time, suffix string) string {
	if prefix != "" {
		prefix += "-"
	}
	return id + DispatchLaunchSuffix + prefix + strconv.FormatInt(t.Unix(), 10) + "-" + suffix
}

func (p *ParameterizedJobConfig) validate(v *validator, jobType string) {
	if !IsBatchType(jobType) {
		v.add("ParameterizedJob", "parameterized job can only be used with the %q or %q scheduler; the job's type is %q", JobTypeBatch, JobTypeSysBatch, jobType)
	}
	switch p.Payload {
	case DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden:
	default:
		v.add("ParameterizedJob.Payload", "unknown payload requirement %q: must be optional, required or forbidden", p.Payload)
	}
	var both []string
	for _, k := range p.MetaRequired {
		if slices.Contains(p.MetaOptional, k) {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		v.add("ParameterizedJob.MetaOptional", "required and optional meta keys should be disjoint; in both: %s", strings.Join(both, ", "))
	}
}

func (p *ParameterizedJobConfig) canonicalize() {
	if p.Payload == "" {
		p.Payload = DispatchPayloadOptional
	}
}

// Copy returns a deep copy.
func (p *ParameterizedJobConfig) Copy() *ParameterizedJobConfig {
	if p == nil {
		return nil
	}
	c := *p
	c.MetaRequired = slices.Clone(p.MetaRequired)
	c.MetaOptional = slices.Clone(p.MetaOptional)
	return &c
}

// validate refuses a file that leaves the task's local/ directory.
func (d *DispatchPayloadConfig) validate(v *validator, p string) {
	if d.File == "" {
		v.add(join(p, "DispatchPayload.File"), "must be set")
		return
	}
	clean := filepath.Clean(filepath.Join("local", d.File))
	if filepath.IsAbs(d.File) || clean == "local" || !strings.HasPrefix(clean, "local"+string(filepath.Separator)) {
		v.add(join(p, "DispatchPayload.File"), "dispatch_payload file %q escapes the task's local directory", d.File)
	}
}

// JobDispatchRequest dispatches a parameterized job (Nomad's shape; the
// payload is base64 in JSON).
type JobDispatchRequest struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdempotencyToken string
	// IdPrefixTemplate goes into the child's ID after "dispatch-";
	// Priority, when set, is the child's priority.
	IdPrefixTemplate string
	Priority         int
	WriteRequest
}

// JobDispatchResponse answers JobDispatchRequest, in Nomad's shape.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	WriteMeta
}

package structs

import (
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// Periodic spec types. Nomad knows one besides its tests' own: cron.
const PeriodicSpecCron = "cron"

// PeriodicLaunchSuffix joins a periodic job's ID and the launch time (Unix
// seconds) in the IDs of its children: "<id>/periodic-<unix>".
const PeriodicLaunchSuffix = "/periodic-"

// PeriodicConfig makes a batch job a template that the leader launches as
// a child job at every time its cron specs name (Nomad's periodic block).
// Spec is the one spec of the older `cron` argument; Specs are those of
// `crons`; a job sets one of the two.
type PeriodicConfig struct {
	Enabled         bool
	Spec            string
	Specs           []string
	SpecType        string
	ProhibitOverlap bool
	// TimeZone is an IANA time zone name ("America/New_York"); the specs
	// are read in it. "" and "UTC" are UTC.
	TimeZone string
}

// PeriodicLaunch records the last launch of a periodic job (Nomad's
// periodic_launch table). The leader writes it in the Raft entry that
// registers the child job, so a new leader knows which runs were made.
type PeriodicLaunch struct {
	Namespace   string
	ID          string
	Launch      time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// IsPeriodic reports whether the job has a periodic block.
func (j *Job) IsPeriodic() bool { return j != nil && j.Periodic != nil }

// IsPeriodicActive reports whether the leader should launch the job: it
// is periodic, enabled and not stopped.
func (j *Job) IsPeriodicActive() bool {
	return j.IsPeriodic() && j.Periodic.Enabled && !j.Stop
}

// IsTemplate reports whether the job only launches children and never
// runs allocations of its own (periodic and parameterized jobs).
func (j *Job) IsTemplate() bool { return j.IsPeriodic() || j.IsParameterized() }

// PeriodicChildID is the ID of the child of periodic job id launched at t.
func PeriodicChildID(id string, t time.Time) string {
	return id + PeriodicLaunchSuffix + strconv.FormatInt(t.Unix(), 10)
}

// Location returns the time zone the specs are read in. An unknown zone
// (refused at registration) reads as UTC.
func (p *PeriodicConfig) Location() *time.Location {
	if p.TimeZone == "" || p.TimeZone == "UTC" {
		return time.UTC
	}
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// AllSpecs returns Spec and Specs together.
func (p *PeriodicConfig) AllSpecs() []string {
	if p.Spec == "" {
		return p.Specs
	}
	return append([]string{p.Spec}, p.Specs...)
}

// validate checks the block as Nomad does: a disabled block is not
// checked; an enabled one needs cron or crons (not both), specs that
// parse, a known time zone and spec type cron. Only batch jobs may be
// periodic.
func (p *PeriodicConfig) validate(v *validator, jobType string) {
	if !p.Enabled {
		return
	}
	if !IsBatchType(jobType) {
		v.add("Periodic", "periodic can only be used with the %q or %q scheduler; the job's type is %q", JobTypeBatch, JobTypeSysBatch, jobType)
	}
	switch {
	case p.Spec != "" && len(p.Specs) > 0:
		v.add("Periodic.Specs", "only one of cron and crons (Spec and Specs) may be set")
	case p.Spec == "" && len(p.Specs) == 0:
		v.add("Periodic.Spec", "must specify a spec (cron or crons)")
	}
	if p.TimeZone != "" {
		if _, err := time.LoadLocation(p.TimeZone); err != nil || strings.ContainsAny(p.TimeZone, "\x00") {
			v.add("Periodic.TimeZone", "invalid time zone %q: unknown time zone", p.TimeZone)
		}
	}
	if p.SpecType != PeriodicSpecCron {
		v.add("Periodic.SpecType", "unknown periodic specification type %q (Drover knows %q)", p.SpecType, PeriodicSpecCron)
		return
	}
	if p.Spec != "" {
		if _, err := cronexpr.Parse(p.Spec); err != nil {
			v.add("Periodic.Spec", "invalid cron spec %q: %v", p.Spec, err)
		}
	}
	for i, spec := range p.Specs {
		if _, err := cronexpr.Parse(spec); err != nil {
			v.add(indexed("Periodic.Specs", i), "invalid cron spec %q: %v", spec, err)
		}
	}
}

// canonicalize gives a periodic block Nomad's defaults.
func (p *PeriodicConfig) canonicalize() {
	if p.SpecType == "" {
		p.SpecType = PeriodicSpecCron
	}
	if p.TimeZone == "" {
		p.TimeZone = "UTC"
	}
}

// Copy returns a deep copy.
func (p *PeriodicConfig) Copy() *PeriodicConfig {
	if p == nil {
		return nil
	}
	c := *p
	c.Specs = append([]string(nil), p.Specs...)
	if p.Specs == nil {
		c.Specs = nil
	}
	return &c
}

// PeriodicLaunchRequest is the Raft entry of one launch of a periodic job:
// the child job, its evaluation and the parent's new last launch, applied
// together (state.LaunchPeriodicJob).
type PeriodicLaunchRequest struct {
	Job    *Job
	Eval   *Evaluation
	Launch *PeriodicLaunch
}

// EvalTriggerPeriodicJob marks the evaluation of a periodic job's child.
const EvalTriggerPeriodicJob = "periodic-job"

// PeriodicForceRequest launches a periodic job now (Job.PeriodicForce).
type PeriodicForceRequest struct {
	JobID string
	WriteRequest
}

// PeriodicForceResponse answers PeriodicForceRequest, in Nomad's shape.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	WriteMeta
}

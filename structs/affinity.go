package structs

import (
	"regexp"
	"slices"
	"strconv"
)

// Affinities and spreads are placement preferences (Nomad's affinity and
// spread blocks): unlike constraints they never filter a node, they move
// its score. The scheduler turns them into two stages of the placement
// stack (scheduler/affinity.go, scheduler/spread.go).

// Default weights, as Nomad's server gives a null weight (api.Affinity and
// api.Spread Canonicalize).
const (
	DefaultAffinityWeight = 50
	DefaultSpreadWeight   = 50
	// MaxAffinityWeight bounds an affinity's weight in both directions.
	MaxAffinityWeight = 100
	// MaxSpreadWeight bounds a spread's weight; MaxSpreadPercent bounds a
	// spread's targets, each and summed.
	MaxSpreadWeight  = 100
	MaxSpreadPercent = 100
	// Names of the scores the stages record in AllocMetric.ScoreMetaData,
	// as Nomad names them.
	ScoreNodeAffinity    = "node-affinity"
	ScoreSpread          = "allocation-spread"
	ScoreBinPack         = "binpack"
	ScoreJobAntiAffinity = "job-anti-affinity"
	ScoreReschedPenalty  = "node-reschedule-penalty"
)

// Affinity prefers (positive weight) or avoids (negative weight) nodes
// where LTarget Operand RTarget holds. Targets interpolate as a
// constraint's do.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// String renders the affinity as Nomad's CLI shows it.
func (a *Affinity) String() string {
	return a.LTarget + " " + a.Operand + " " + a.RTarget + " " + strconv.Itoa(int(a.Weight))
}

// Spread asks for a group's allocations to be spread over the values of a
// node attribute: in the proportions of SpreadTarget, or evenly over the
// values in use when it has no targets.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is the share of a group's allocations wanted on nodes whose
// attribute is Value.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// affinityOperands are the operands an affinity may use: every node test
// a constraint has (distinct_hosts and distinct_property count
// allocations, not a node's attributes).
var affinityOperands = map[string]bool{
	ConstraintEqual: true, ConstraintEqualAlt: true, ConstraintNotEqual: true,
	ConstraintLess: true, ConstraintLessEqual: true, ConstraintGreater: true,
	ConstraintGreaterEqual: true, ConstraintRegex: true, ConstraintVersion: true,
	ConstraintSemver: true, ConstraintSetContains: true, ConstraintSetContainsAll: true,
	ConstraintSetContainsAny: true, ConstraintAttributeIsSet: true, ConstraintAttributeIsUnset: true,
}

// validatePreferences checks the affinities and spreads of a job, group or
// task (spreads is nil for a task). System jobs place one allocation per
// node, so preferences mean nothing there; Nomad refuses them too.
func validatePreferences(v *validator, p, jobType string, affs []*Affinity, spreads []*Spread) {
	if IsSystemType(jobType) {
		if len(affs) > 0 {
			v.add(join(p, "Affinities"), "%s jobs may not have an affinity block", jobType)
		}
		if len(spreads) > 0 {
			v.add(join(p, "Spreads"), "%s jobs may not have a spread block", jobType)
		}
		return
	}
	validateAffinities(v, join(p, "Affinities"), affs)
	validateSpreads(v, join(p, "Spreads"), spreads)
}

func validateAffinities(v *validator, p string, affs []*Affinity) {
	if len(affs) > maxConstraintsPerList {
		v.add(p, "at most %d affinities; got %d", maxConstraintsPerList, len(affs))
		return
	}
	for i, a := range affs {
		ap := indexed(p, i)
		if a == nil {
			v.add(ap, "must not be null")
			continue
		}
		if a.LTarget == "" {
			v.add(join(ap, "LTarget"), "must be set")
		}
		switch {
		case a.Operand == "":
			v.add(join(ap, "Operand"), "must be set")
		case !affinityOperands[a.Operand]:
			v.add(join(ap, "Operand"), "unknown affinity operator %q", a.Operand)
		case a.Operand == ConstraintRegex:
			if _, err := regexp.Compile(a.RTarget); err != nil {
				v.add(join(ap, "RTarget"), "invalid regular expression: %v", err)
			}
		case a.Operand == ConstraintAttributeIsSet || a.Operand == ConstraintAttributeIsUnset:
		default:
			if a.RTarget == "" {
				v.add(join(ap, "RTarget"), "operator %q needs a value", a.Operand)
			}
		}
		switch {
		case a.Weight == 0:
			v.add(join(ap, "Weight"), "must not be zero")
		case a.Weight > MaxAffinityWeight || a.Weight < -MaxAffinityWeight:
			v.add(join(ap, "Weight"), "must be between -%d and %d; got %d", MaxAffinityWeight, MaxAffinityWeight, a.Weight)
		}
	}
}

func validateSpreads(v *validator, p string, spreads []*Spread) {
	if len(spreads) > maxConstraintsPerList {
		v.add(p, "at most %d spreads; got %d", maxConstraintsPerList, len(spreads))
		return
	}
	for i, s := range spreads {
		sp := indexed(p, i)
		if s == nil {
			v.add(sp, "must not be null")
			continue
		}
		if s.Attribute == "" {
			v.add(join(sp, "Attribute"), "must be set")
		}
		if s.Weight <= 0 || s.Weight > MaxSpreadWeight {
			v.add(join(sp, "Weight"), "must be between 1 and %d; got %d", MaxSpreadWeight, s.Weight)
		}
		sum := 0
		for k, t := range s.SpreadTarget {
			tp := indexed(join(sp, "SpreadTarget"), k)
			if t == nil {
				v.add(tp, "must not be null")
				continue
			}
			if t.Percent > MaxSpreadPercent {
				v.add(join(tp, "Percent"), "must be between 0 and %d; got %d", MaxSpreadPercent, t.Percent)
			}
			if prev := slices.IndexFunc(s.SpreadTarget[:k], func(o *SpreadTarget) bool { return o != nil && o.Value == t.Value }); prev >= 0 {
				v.add(join(tp, "Value"), "spread target value %q already defined (also SpreadTarget[%d])", t.Value, prev)
			}
			sum += int(t.Percent)
		}
		if sum > MaxSpreadPercent {
			v.add(join(sp, "SpreadTarget"), "the target percentages must not sum to more than %d%%; got %d%%", MaxSpreadPercent, sum)
		}
	}
}

// HasPreferences reports whether placing an allocation of tg in job j is
// scored by affinities or spreads.
func (j *Job) HasPreferences(tg *TaskGroup) bool {
	if len(j.Affinities) > 0 || len(j.Spreads) > 0 || len(tg.Affinities) > 0 || len(tg.Spreads) > 0 {
		return true
	}
	for _, t := range tg.Tasks {
		if len(t.Affinities) > 0 {
			return true
		}
	}
	return false
}

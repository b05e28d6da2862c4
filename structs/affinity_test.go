package structs

import (
	"errors"
	"strings"
	"testing"
)

func TestAffinitySpreadValidate(t *testing.T) {
	aff := func(op, r string, w int8) *Affinity {
		return &Affinity{LTarget: "${node.datacenter}", Operand: op, RTarget: r, Weight: w}
	}
	spread := func(w int8, targets ...*SpreadTarget) *Spread {
		return &Spread{Attribute: "${node.datacenter}", Weight: w, SpreadTarget: targets}
	}
	cases := []struct {
		name string
		edit func(j *Job)
		want []string // field: fragment; none: valid
	}{
		{"valid", func(j *Job) {
			j.Affinities = []*Affinity{aff("=", "dc1", 50), aff("regexp", "dc[12]", -100), aff("is_set", "", 1)}
			j.Spreads = []*Spread{spread(100, &SpreadTarget{"dc1", 50}, &SpreadTarget{"dc2", 50})}
			j.TaskGroups[0].Affinities = []*Affinity{aff("set_contains_any", "a,b", 100)}
			j.TaskGroups[0].Spreads = []*Spread{spread(1)}
			j.TaskGroups[0].Tasks[0].Affinities = []*Affinity{aff("version", ">= 1", -1)}
		}, nil},
		{"zero weight", func(j *Job) { j.Affinities = []*Affinity{aff("=", "dc1", 0)} },
			[]string{"Affinities[0].Weight: must not be zero"}},
		{"weight out of range", func(j *Job) {
			j.TaskGroups[0].Affinities = []*Affinity{aff("=", "dc1", 101), aff("=", "dc1", -101)}
		}, []string{"TaskGroups[0].Affinities[0].Weight: must be between -100 and 100; got 101",
			"TaskGroups[0].Affinities[1].Weight: must be between -100 and 100; got -101"}},
		{"unknown operand", func(j *Job) { j.TaskGroups[0].Tasks[0].Affinities = []*Affinity{aff("near", "x", 5)} },
			[]string{`TaskGroups[0].Tasks[0].Affinities[0].Operand: unknown affinity operator "near"`}},
		{"distinct_hosts is no affinity", func(j *Job) { j.Affinities = []*Affinity{aff("distinct_hosts", "", 5)} },
			[]string{`Affinities[0].Operand: unknown affinity operator "distinct_hosts"`}},
		{"missing value", func(j *Job) { j.Affinities = []*Affinity{aff("=", "", 5)} },
			[]string{`Affinities[0].RTarget: operator "=" needs a value`}},
		{"bad regexp", func(j *Job) { j.Affinities = []*Affinity{aff("regexp", "(", 5)} },
			[]string{"Affinities[0].RTarget: invalid regular expression"}},
		{"missing attribute", func(j *Job) { j.Affinities = []*Affinity{{Operand: "=", RTarget: "x", Weight: 5}} },
			[]string{"Affinities[0].LTarget: must be set"}},
		{"spread weight", func(j *Job) { j.Spreads = []*Spread{spread(0), spread(-5), spread(101)} },
			[]string{"Spreads[0].Weight: must be between 1 and 100; got 0", "Spreads[1].Weight: must be between 1 and 100; got -5",
				"Spreads[2].Weight: must be between 1 and 100; got 101"}},
		{"targets over 100", func(j *Job) {
			j.TaskGroups[0].Spreads = []*Spread{spread(50, &SpreadTarget{"dc1", 60}, &SpreadTarget{"dc2", 50})}
		}, []string{"TaskGroups[0].Spreads[0].SpreadTarget: the target percentages must not sum to more than 100%; got 110%"}},
		{"one target over 100", func(j *Job) { j.Spreads = []*Spread{spread(50, &SpreadTarget{"dc1", 150})} },
			[]string{"Spreads[0].SpreadTarget[0].Percent: must be between 0 and 100; got 150",
				"Spreads[0].SpreadTarget: the target percentages must not sum to more than 100%; got 150%"}},
		{"duplicate target", func(j *Job) {
			j.Spreads = []*Spread{spread(50, &SpreadTarget{"dc1", 10}, &SpreadTarget{"dc1", 20})}
		}, []string{`Spreads[0].SpreadTarget[1].Value: spread target value "dc1" already defined (also SpreadTarget[0])`}},
		{"spread without attribute", func(j *Job) { j.Spreads = []*Spread{{Weight: 5}} },
			[]string{"Spreads[0].Attribute: must be set"}},
		{"system job", func(j *Job) {
			j.Type = JobTypeSystem
			j.TaskGroups[0].Migrate = nil
			j.Affinities = []*Affinity{aff("=", "dc1", 5)}
			j.TaskGroups[0].Spreads = []*Spread{spread(5)}
		}, []string{"Affinities: system jobs may not have an affinity block",
			"TaskGroups[0].Spreads: system jobs may not have a spread block"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := specJob()
			tc.edit(j)
			err := j.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			msgs := strings.Join(ve.Messages(), "\n")
			for _, w := range tc.want {
				if !strings.Contains(msgs, w) {
					t.Errorf("missing %q in\n%s", w, msgs)
				}
			}
			if len(ve.Errors) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%s", len(ve.Errors), len(tc.want), msgs)
			}
		})
	}
}

func TestSpreadCopy(t *testing.T) {
	j := specJob()
	j.Spreads = []*Spread{{Attribute: "${node.datacenter}", Weight: 50, SpreadTarget: []*SpreadTarget{{"dc1", 50}}}}
	j.TaskGroups[0].Tasks[0].Affinities = []*Affinity{{LTarget: "a", Operand: "=", RTarget: "b", Weight: 5}}
	c := j.Copy()
	c.Spreads[0].SpreadTarget[0].Percent = 10
	c.TaskGroups[0].Tasks[0].Affinities[0].Weight = 7
	if j.Spreads[0].SpreadTarget[0].Percent != 50 || j.TaskGroups[0].Tasks[0].Affinities[0].Weight != 5 {
		t.Fatal("Copy shares spreads or affinities")
	}
}

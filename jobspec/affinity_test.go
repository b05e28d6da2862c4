package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

const affinityHCL = `
job "web" {
  affinity {
    attribute = "${meta.rack}"
    value     = "r1"
  }
  spread {
    attribute = "${node.datacenter}"
    target "dc1" {
      percent = 50
    }
    target "dc2" {
      percent = 30
    }
  }
  group "g" {
    count = 10
    affinity {
      attribute = "${node.class}"
      regexp    = "^large"
      weight    = -40
    }
    spread {
      attribute = "${meta.rack}"
      weight    = 100
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
      affinity {
        attribute = "${attr.os.name}"
        operator  = "!="
        value     = "windows"
        weight    = 25
      }
    }
  }
}
`

// TestParseAffinitySpread: the HCL blocks and Nomad's JSON (as Nomad's CLI
// sends it: null weights) give the same job, with Nomad's defaults
// (operator "=", weight 50).
func TestParseAffinitySpread(t *testing.T) {
	hcl, err := Parse("a.hcl", []byte(affinityHCL), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantJobAff := []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1", Weight: 50}}
	wantJobSpread := []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50,
		SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 30}}}}
	wantGroupAff := []*structs.Affinity{{LTarget: "${node.class}", Operand: "regexp", RTarget: "^large", Weight: -40}}
	wantGroupSpread := []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100}}
	wantTaskAff := []*structs.Affinity{{LTarget: "${attr.os.name}", Operand: "!=", RTarget: "windows", Weight: 25}}
	tg := hcl.TaskGroups[0]
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"job affinities", hcl.Affinities, wantJobAff}, {"job spreads", hcl.Spreads, wantJobSpread},
		{"group affinities", tg.Affinities, wantGroupAff}, {"group spreads", tg.Spreads, wantGroupSpread},
		{"task affinities", tg.Tasks[0].Affinities, wantTaskAff},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %s, want %s", c.name, mustJSON(t, c.got), mustJSON(t, c.want))
		}
	}
	js, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "web", "Name": "web",
	  "Affinities": [{"LTarget": "${meta.rack}", "RTarget": "r1", "Operand": "=", "Weight": null}],
	  "Spreads": [{"Attribute": "${node.datacenter}", "SpreadTarget": [{"Value": "dc1", "Percent": 50}, {"Value": "dc2", "Percent": 30}]}],
	  "TaskGroups": [{"Name": "g", "Count": 10,
	    "Affinities": [{"LTarget": "${node.class}", "RTarget": "^large", "Operand": "regexp", "Weight": -40}],
	    "Spreads": [{"Attribute": "${meta.rack}", "Weight": 100, "SpreadTarget": null}],
	    "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"},
	      "Affinities": [{"LTarget": "${attr.os.name}", "RTarget": "windows", "Operand": "!=", "Weight": 25}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	hcl.Canonicalize()
	js.Canonicalize()
	if !reflect.DeepEqual(hcl, js) {
		t.Fatalf("HCL and JSON differ:\n%s\n%s", mustJSON(t, hcl), mustJSON(t, js))
	}
	if err := js.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestAffinitySpreadErrors: bad input names the field, in HCL and JSON.
func TestAffinitySpreadErrors(t *testing.T) {
	hclCases := []struct{ name, from, to, want string }{
		{"weight out of int8", "weight    = -40", "weight    = -400", "weight must be between -128 and 127"},
		{"two operators", `regexp    = "^large"`, "regexp    = \"^large\"\n      operator = \"=\"", "Conflicting affinity operators"},
		{"unknown argument", `percent = 30`, "percent = 30\n      share = 1", `"share"`},
		{"target without value", `target "dc2"`, `target`, "Missing target value"},
	}
	for _, tc := range hclCases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(affinityHCL, tc.from, tc.to, 1)
			if src == affinityHCL {
				t.Fatal("replacement did not apply")
			}
			if _, err := Parse("a.hcl", []byte(src), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	validation := []struct{ name, from, to, want string }{
		{"zero weight", "weight    = -40", "weight    = 0", "TaskGroups[0].Affinities[0].Weight: must not be zero"},
		{"targets over 100", "percent = 30", "percent = 60", "Spreads[0].SpreadTarget: the target percentages must not sum to more than 100%; got 110%"},
		{"duplicate target", `target "dc2"`, `target "dc1"`, `Spreads[0].SpreadTarget[1].Value: spread target value "dc1" already defined`},
		{"spread weight", "weight    = 100", "weight    = 101", "TaskGroups[0].Spreads[0].Weight: must be between 1 and 100; got 101"},
	}
	for _, tc := range validation {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(affinityHCL, tc.from, tc.to, 1)
			if src == affinityHCL {
				t.Fatal("replacement did not apply")
			}
			job, err := Parse("a.hcl", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			job.Canonicalize()
			if err := job.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	// JSON: an explicit zero weight stays zero (only null is defaulted);
	// a weight beyond int8 is refused by the decoder, naming the field.
	js, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "w", "Name": "w", "Affinities": [{"LTarget": "a", "RTarget": "b", "Operand": "=", "Weight": 0}],
	  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if js.Affinities[0].Weight != 0 {
		t.Fatalf("explicit 0 weight became %d", js.Affinities[0].Weight)
	}
	_, err = DecodeAPIJobBytes("Job", []byte(`{"ID": "w", "Name": "w", "Spreads": [{"Attribute": "a", "Weight": 500}],
	  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "Job.Spreads.Weight") {
		t.Fatalf("weight 500: %v", err)
	}
}

// TestAffinityShorthandValue: a shorthand carries the value; with value
// too, the block is refused.
func TestAffinityShorthandValue(t *testing.T) {
	src := strings.Replace(affinityHCL, `regexp    = "^large"`, "regexp    = \"^large\"\n      value = \"x\"", 1)
	if _, err := Parse("a.hcl", []byte(src), nil); err == nil || !strings.Contains(err.Error(), "regexp carries the value") {
		t.Fatalf("err %v", err)
	}
}

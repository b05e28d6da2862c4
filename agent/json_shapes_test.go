package agent

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	metrics "github.com/hashicorp/go-metrics"
	nomad "github.com/hashicorp/nomad/api"
)

// fill sets every exported field of v (a pointer) to a non-zero value,
// recursively to a small depth, so that encoding it produces every key
// with a value of its type. A field whose JSON type differs between
// Drover's and Nomad's structs then fails to decode.
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1700000000, 0).UTC()))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("v"))
		}
	}
}

func filled[T any]() *T {
	var x T
	fill(reflect.ValueOf(&x), 0)
	return &x
}

// Every response Drover sends must decode into the type Nomad's client
// decodes it into, and every job Nomad's client sends must decode into
// Drover's job.
func TestJSONShapesMatchNomad(t *testing.T) {
	cases := []struct {
		name string
		from any
		into any
	}{
		{"Job", filled[structs.Job](), &nomad.Job{}},
		{"JobListStub", filled[structs.JobListStub](), &nomad.JobListStub{}},
		{"JobRegisterResponse", filled[structs.JobRegisterResponse](), &nomad.JobRegisterResponse{}},
		{"JobDeregisterResponse", filled[structs.JobDeregisterResponse](), &nomad.JobDeregisterResponse{}},
		{"Node", filled[structs.Node](), &nomad.Node{}},
		{"NodeListStub", filled[structs.NodeListStub](), &nomad.NodeListStub{}},
		{"Evaluation", filled[structs.Evaluation](), &nomad.Evaluation{}},
		{"Allocation", filled[structs.Allocation](), &nomad.Allocation{}},
		{"RaftConfiguration", filled[structs.RaftConfigurationResponse](), &nomad.RaftConfiguration{}},
		{"AgentSelf", filled[structs.AgentSelf](), &nomad.AgentSelf{}},
		{"AgentMembers", filled[structs.AgentMembersResponse](), &nomad.ServerMembers{}},
		{"AgentHealth", filled[structs.AgentHealthResponse](), &nomad.AgentHealthResponse{}},
		{"AllocListStub", filled[structs.AllocListStub](), &nomad.AllocationListStub{}},
		{"JobSummary", filled[structs.JobSummary](), &nomad.JobSummary{}},
		{"JobPlanResponse", planResponse(), &nomad.JobPlanResponse{}},
		{"AllocStopResponse", filled[structs.AllocStopResponse](), &nomad.AllocStopResponse{}},
		{"NodeDrainUpdateResponse", filled[structs.NodeUpdateHTTPResponse](), &nomad.NodeDrainUpdateResponse{}},
		{"NodeEligibilityUpdateResponse", filled[structs.NodeUpdateHTTPResponse](), &nomad.NodeEligibilityUpdateResponse{}},
		{"MetricsSummary", filled[metrics.MetricsSummary](), &nomad.MetricsSummary{}},
		// The request direction: what Nomad's client sends.
		{"JobRegisterRequest (request)", filled[nomad.JobRegisterRequest](), &structs.JobRegisterHTTPRequest{}},
		{"JobPlanRequest (request)", filled[nomad.JobPlanRequest](), &structs.JobPlanHTTPRequest{}},
		{"NodeUpdateDrainRequest (request)", filled[nomad.NodeUpdateDrainRequest](), &structs.NodeDrainHTTPRequest{}},
		{"NodeUpdateEligibilityRequest (request)", filled[nomad.NodeUpdateEligibilityRequest](), &structs.NodeEligibilityHTTPRequest{}},
		{"JobsParseRequest (request)", filled[nomad.JobsParseRequest](), &structs.JobsParseHTTPRequest{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf, err := json.Marshal(tc.from)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if err := json.Unmarshal(buf, tc.into); err != nil {
				t.Fatalf("Nomad-shaped decode of %T into %T: %v", tc.from, tc.into, err)
			}
		})
	}
}

// planResponse is a filled JobPlanResponse whose diff lists are empty:
// structs.JobDiff does not compute field diffs yet (its lists are []any),
// and the server leaves them nil.
func planResponse() *structs.JobPlanResponse {
	p := filled[structs.JobPlanResponse]()
	p.Diff.Fields, p.Diff.Objects, p.Diff.TaskGroups = nil, nil, nil
	return p
}

// The check can fail: a field with the same name and another JSON type is
// caught, even deep inside.
func TestJSONShapesDetectMismatch(t *testing.T) {
	type task struct{ KillTimeout string }
	type group struct{ Tasks []task }
	type job struct{ TaskGroups []group }
	buf, err := json.Marshal(filled[structs.Job]())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf, &job{}); err == nil {
		t.Fatal("a duration decoded into a string field without error")
	}
}

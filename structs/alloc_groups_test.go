package structs

import (
	"reflect"
	"testing"
)

// groupedFields are the Allocation fields an AllocGroup keeps per
// allocation; every other field must be compared by sameGroup.
var groupedFields = map[string]bool{"ID": true, "Name": true, "NodeID": true, "NodeName": true, "Metrics": true}

// TestSameGroupCoversEveryField changes each Allocation field in turn and
// checks that sameGroup tells the two apart, unless the field is one a
// group keeps per allocation. A field added to Allocation and forgotten
// in sameGroup fails here instead of being silently dropped from plans.
func TestSameGroupCoversEveryField(t *testing.T) {
	base := fixturePlanResults(1).AllocsUpdated[0]
	typ := reflect.TypeOf(*base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		c := *base
		v := reflect.ValueOf(&c).Elem().Field(i)
		if !setOther(v) {
			t.Fatalf("field %s: no way to change a %s; extend setOther", f.Name, f.Type)
		}
		got := sameGroup(base, &c)
		if want := groupedFields[f.Name]; got != want {
			t.Errorf("field %s changed: sameGroup = %v, want %v", f.Name, got, want)
		}
	}
}

// setOther sets v to a non-zero value different from its current one.
func setOther(v reflect.Value) bool {
	if !v.CanSet() {
		return false
	}
	if v.Type() == reflect.TypeFor[TaskStates]() {
		v.Set(reflect.ValueOf(NewTaskStates(map[string]*TaskState{"t": {State: TaskStateRunning}})))
		return true
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-other")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Uint64:
		v.SetUint(v.Uint() + 7)
	case reflect.Ptr:
		n := reflect.New(v.Type().Elem())
		if v.Type().Elem().Kind() == reflect.Struct {
			// A different non-zero value: set the first settable field.
			for i := 0; i < n.Elem().NumField(); i++ {
				if setOther(n.Elem().Field(i)) {
					break
				}
			}
		}
		v.Set(n)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.Zero(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		v.Set(m)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if setOther(v.Field(i)) {
				return true
			}
		}
		return false
	case reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		return false
	}
	return true
}

func TestCompactExpandRoundTrip(t *testing.T) {
	req := fixturePlanResults(50)
	// Two task groups, and an allocation that fits no group.
	for i, a := range req.AllocsUpdated {
		if i%2 == 1 {
			a.TaskGroup = "other"
		}
		if i%10 == 0 {
			a.Metrics = &AllocMetric{NodesEvaluated: i}
		}
	}
	odd := req.AllocsUpdated[7]
	odd.PreviousAllocation = "prev"
	want := make([]Allocation, len(req.AllocsUpdated))
	for i, a := range req.AllocsUpdated {
		want[i] = *a
	}
	plainLen := encodedLen(t, req)

	req.Compact()
	if len(req.AllocGroups) != 2 || len(req.AllocsUpdated) != 1 || req.AllocsUpdated[0] != odd {
		t.Fatalf("Compact: %d groups, %d single allocations; want 2 and the odd one", len(req.AllocGroups), len(req.AllocsUpdated))
	}
	compactLen := encodedLen(t, req)
	if compactLen*3 > plainLen {
		t.Errorf("compact entry is %d bytes, plain %d: want under a third", compactLen, plainLen)
	}

	buf, err := Encode(ApplyPlanResultsRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	var got ApplyPlanResultsRequest
	if err := Decode(buf[1:], &got); err != nil {
		t.Fatal(err)
	}
	if err := got.Expand(); err != nil {
		t.Fatal(err)
	}
	if got.AllocGroups != nil {
		t.Errorf("Expand left AllocGroups set")
	}
	if len(got.AllocsUpdated) != len(want) {
		t.Fatalf("expanded %d allocations, want %d", len(got.AllocsUpdated), len(want))
	}
	byID := map[string]*Allocation{}
	for _, a := range got.AllocsUpdated {
		byID[a.ID] = a
	}
	for i := range want {
		a := byID[want[i].ID]
		if a == nil {
			t.Fatalf("allocation %s missing after Expand", want[i].ID)
		}
		if !reflect.DeepEqual(*a, want[i]) {
			t.Errorf("allocation %s differs after the round trip:\n got %+v\nwant %+v", a.ID, *a, want[i])
		}
	}
	// Members of a group share the template's resources.
	g0 := byID[want[0].ID]
	g2 := byID[want[2].ID]
	if g0.AllocatedResources != g2.AllocatedResources {
		t.Errorf("group members do not share their resources")
	}
}

func TestCompactLeavesUngroupable(t *testing.T) {
	req := fixturePlanResults(3)
	for i, a := range req.AllocsUpdated {
		a.TaskGroup = string(rune('a' + i))
	}
	req.Compact()
	if req.AllocGroups != nil || len(req.AllocsUpdated) != 3 {
		t.Fatalf("Compact grouped allocations of different groups: %d groups, %d left", len(req.AllocGroups), len(req.AllocsUpdated))
	}
	for i, a := range req.AllocsUpdated {
		if a.TaskGroup != string(rune('a'+i)) {
			t.Errorf("order changed: %d is %s", i, a.TaskGroup)
		}
	}
}

func TestExpandRefusesMalformedGroup(t *testing.T) {
	req := fixturePlanResults(4)
	req.Compact()
	if len(req.AllocGroups) != 1 {
		t.Fatalf("want one group, got %d", len(req.AllocGroups))
	}
	req.AllocGroups[0].NodeIDs = req.AllocGroups[0].NodeIDs[:3]
	err := req.Expand()
	verr, ok := err.(*ValidationError)
	if !ok || len(verr.Errors) != 1 || verr.Errors[0].Field != "AllocGroups[0]" {
		t.Fatalf("Expand of a malformed group: %v, want a validation error naming AllocGroups[0]", err)
	}
	if len(req.AllocGroups) != 1 || len(req.AllocsUpdated) != 0 {
		t.Errorf("a refused Expand moved allocations")
	}
	req.AllocGroups[0].NodeIDs = append(req.AllocGroups[0].NodeIDs, "n")
	req.AllocGroups[0].MetricIndex[2] = 9
	if err := req.Expand(); err == nil {
		t.Errorf("Expand accepted a metric index out of range")
	}
}

func encodedLen(t *testing.T, req *ApplyPlanResultsRequest) int {
	t.Helper()
	buf, err := Encode(ApplyPlanResultsRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	return len(buf)
}

// Placements that differ only in their ports still form one group: the
// group carries each allocation's ports and granted networks, and Expand
// gives each its own resources with them (task resources shared).
func TestCompactExpandWithPorts(t *testing.T) {
	req := fixturePlanResults(20)
	base := req.AllocsUpdated[0].AllocatedResources
	for i, a := range req.AllocsUpdated {
		ar := *base
		ar.Shared.Ports = []AllocatedPortMapping{{Label: "http", Value: 20000 + i, HostIP: "10.0.0.1"}}
		ar.Shared.Networks = []*NetworkResource{{Mode: NetworkModeHost,
			DynamicPorts: []Port{{Label: "http", Value: 20000 + i, HostNetwork: "default"}}}}
		a.AllocatedResources = &ar
	}
	want := make([]Allocation, len(req.AllocsUpdated))
	for i, a := range req.AllocsUpdated {
		want[i] = *a
	}
	req.Compact()
	if len(req.AllocGroups) != 1 || len(req.AllocsUpdated) != 0 {
		t.Fatalf("Compact: %d groups, %d single allocations; want one group", len(req.AllocGroups), len(req.AllocsUpdated))
	}
	if tr := req.AllocGroups[0].Template.AllocatedResources; len(tr.Shared.Ports) != 0 || len(tr.Shared.Networks) != 0 {
		t.Fatalf("the template carries ports: %+v", tr.Shared)
	}
	buf, err := Encode(ApplyPlanResultsRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	var got ApplyPlanResultsRequest
	if err := Decode(buf[1:], &got); err != nil {
		t.Fatal(err)
	}
	if err := got.Expand(); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Allocation{}
	for _, a := range got.AllocsUpdated {
		byID[a.ID] = a
	}
	for i := range want {
		a := byID[want[i].ID]
		if a == nil || !reflect.DeepEqual(*a, want[i]) {
			t.Fatalf("allocation %s differs after the round trip:\n got %+v\nwant %+v", want[i].ID, a, want[i])
		}
	}
	a0, a1 := byID[want[0].ID], byID[want[1].ID]
	if a0.AllocatedResources == a1.AllocatedResources {
		t.Error("allocations with ports share one resources object")
	}
	// A malformed port list is refused.
	req.AllocGroups = []*AllocGroup{{Template: &Allocation{}, IDs: []string{"a"}, Names: []string{"n"},
		NodeIDs: []string{"x"}, NodeNames: []string{"y"}, Metrics: []*AllocMetric{nil}, MetricIndex: []int{0},
		Ports: [][]AllocatedPortMapping{}, Networks: [][]*NetworkResource{}}}
	if err := req.Expand(); err == nil {
		t.Error("a group with a short port list expanded")
	}
}

// sameResources compares every field of AllocatedSharedResources but
// the per-allocation ones; a new field must be added there.
func TestSameResourcesCoversSharedFields(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[AllocatedSharedResources]().Fields() {
		names = append(names, f.Name)
	}
	if !reflect.DeepEqual(names, []string{"DiskMB", "Networks", "Ports"}) {
		t.Fatalf("AllocatedSharedResources has fields %v: update sameResources and AllocGroup", names)
	}
}

package structs

import (
	"reflect"
	"testing"
	"time"
)

func diffTestJob() *Job {
	j := &Job{ID: "web", Name: "web", Type: JobTypeService, Datacenters: []string{"dc1"},
		Meta:        map[string]string{"owner": "a"},
		Constraints: []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*TaskGroup{{Name: "api", Count: 2,
			RestartPolicy: &RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			Tasks: []*Task{{Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
				Env:       map[string]string{"A": "1"},
				Resources: &Resources{CPU: 100, MemoryMB: 64}}}}}}
	j.Canonicalize()
	return j
}

func mustDiff(t *testing.T, a, b *Job) *JobDiff {
	t.Helper()
	d, err := a.Diff(b, true)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func findField(fs []*FieldDiff, name string) *FieldDiff {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func findObject(os []*ObjectDiff, name string, typ DiffType) *ObjectDiff {
	for _, o := range os {
		if o.Name == name && o.Type == typ {
			return o
		}
	}
	return nil
}

func TestJobDiffNone(t *testing.T) {
	a := diffTestJob()
	b := a.Copy()
	b.Version, b.ModifyIndex, b.Status = 4, 99, JobStatusRunning
	d := mustDiff(t, a, b)
	if d.Type != DiffTypeNone || d.ID != "web" || len(d.Fields) != 0 || len(d.Objects) != 0 {
		t.Fatalf("diff = %+v", d)
	}
	if len(d.TaskGroups) != 1 || d.TaskGroups[0].Type != DiffTypeNone || d.TaskGroups[0].Tasks[0].Type != DiffTypeNone {
		t.Fatalf("groups = %+v", d.TaskGroups[0])
	}
}

func TestJobDiffAddedAndDeleted(t *testing.T) {
	a := diffTestJob()
	d := mustDiff(t, nil, a)
	if d.Type != DiffTypeAdded || findField(d.Fields, "Priority").New != "50" || d.TaskGroups[0].Type != DiffTypeAdded ||
		d.TaskGroups[0].Tasks[0].Type != DiffTypeAdded {
		t.Fatalf("added: %+v", d)
	}
	if o := findObject(d.TaskGroups[0].Tasks[0].Objects, "Config", DiffTypeAdded); o == nil || findField(o.Fields, "args[0]").New != "60" {
		t.Fatalf("added task's config: %+v", d.TaskGroups[0].Tasks[0].Objects)
	}
	d = mustDiff(t, a, nil)
	if d.Type != DiffTypeDeleted || d.TaskGroups[0].Type != DiffTypeDeleted {
		t.Fatalf("deleted: %+v", d)
	}
	if _, err := a.Diff(&Job{ID: "other"}, true); err == nil {
		t.Fatal("jobs of different IDs compared")
	}
}

func TestJobDiffEdits(t *testing.T) {
	a := diffTestJob()
	b := a.Copy()
	b.Priority = 70
	b.Meta = map[string]string{"owner": "b", "team": "x"}
	b.Datacenters = []string{"dc1", "dc2"}
	b.Constraints = []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "darwin", Operand: "="}}
	b.TaskGroups[0].Count = 3
	b.TaskGroups[0].RestartPolicy.Attempts = 5
	b.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"90"}}
	b.TaskGroups[0].Tasks[0].KillTimeout = 9 * time.Second
	b.TaskGroups = append(b.TaskGroups, &TaskGroup{Name: "db", Count: 1})
	d := mustDiff(t, a, b)
	if d.Type != DiffTypeEdited {
		t.Fatalf("type %s", d.Type)
	}
	if f := findField(d.Fields, "Priority"); f == nil || f.Type != DiffTypeEdited || f.Old != "50" || f.New != "70" {
		t.Fatalf("Priority: %+v", f)
	}
	if f := findField(d.Fields, "Meta[team]"); f == nil || f.Type != DiffTypeAdded {
		t.Fatalf("Meta[team]: %+v", f)
	}
	if f := findField(d.Fields, "Meta[owner]"); f == nil || f.Type != DiffTypeEdited {
		t.Fatalf("Meta[owner]: %+v", f)
	}
	if f := findField(d.Fields, "Name"); f != nil {
		t.Fatalf("a job's unchanged field listed: %+v", f)
	}
	dc := findObject(d.Objects, "Datacenters", DiffTypeAdded)
	if dc == nil || len(dc.Fields) != 2 || findField(dc.Fields, "Datacenters").Type == "" {
		t.Fatalf("Datacenters: %+v", d.Objects)
	}
	if findObject(d.Objects, "Constraint", DiffTypeAdded) == nil || findObject(d.Objects, "Constraint", DiffTypeDeleted) == nil {
		t.Fatalf("Constraint: %+v", d.Objects)
	}
	if len(d.TaskGroups) != 2 || d.TaskGroups[0].Name != "api" || d.TaskGroups[1].Name != "db" || d.TaskGroups[1].Type != DiffTypeAdded {
		t.Fatalf("groups: %+v", d.TaskGroups)
	}
	g := d.TaskGroups[0]
	if f := findField(g.Fields, "Count"); g.Type != DiffTypeEdited || f == nil || f.Old != "2" || f.New != "3" {
		t.Fatalf("group: %+v", g)
	}
	rp := findObject(g.Objects, "RestartPolicy", DiffTypeEdited)
	if rp == nil || findField(rp.Fields, "Attempts").New != "5" || findField(rp.Fields, "Mode").Type != DiffTypeNone {
		t.Fatalf("RestartPolicy (contextual): %+v", g.Objects)
	}
	task := g.Tasks[0]
	if f := findField(task.Fields, "KillTimeout"); task.Type != DiffTypeEdited || f == nil || f.New != "9000000000" {
		t.Fatalf("task: %+v", task)
	}
	cfg := findObject(task.Objects, "Config", DiffTypeEdited)
	if cfg == nil || findField(cfg.Fields, "args[0]").Old != "60" || findField(cfg.Fields, "command").Type != DiffTypeNone {
		t.Fatalf("Config: %+v", task.Objects)
	}
}

// Every field a user can set on a job, group or task shows in the diff
// when it changes: the differ is driven by reflection, and this walks
// the types, so a field added later is covered (or this fails).
func TestJobDiffCoversEveryField(t *testing.T) {
	levels := []struct {
		name string
		typ  reflect.Type
		skip map[string]bool
		get  func(*Job) reflect.Value
		seen func(*JobDiff) DiffType
	}{
		{"job", reflect.TypeFor[Job](), jobDiffSkip, func(j *Job) reflect.Value { return reflect.ValueOf(j).Elem() },
			func(d *JobDiff) DiffType { return d.Type }},
		{"group", reflect.TypeFor[TaskGroup](), groupDiffSkip, func(j *Job) reflect.Value { return reflect.ValueOf(j.TaskGroups[0]).Elem() },
			func(d *JobDiff) DiffType { return combinedType(d.TaskGroups[0].Fields, d.TaskGroups[0].Objects) }},
		{"task", reflect.TypeFor[Task](), taskDiffSkip, func(j *Job) reflect.Value { return reflect.ValueOf(j.TaskGroups[0].Tasks[0]).Elem() },
			func(d *JobDiff) DiffType {
				return combinedType(d.TaskGroups[0].Tasks[0].Fields, d.TaskGroups[0].Tasks[0].Objects)
			}},
	}
	for _, l := range levels {
		for i := range l.typ.NumField() {
			f := l.typ.Field(i)
			if !f.IsExported() || l.skip[f.Name] || f.Name == "TaskGroups" || f.Name == "Tasks" {
				continue
			}
			t.Run(l.name+"."+f.Name, func(t *testing.T) {
				a := diffTestJob()
				b := a.Copy()
				mutate(l.get(b).Field(i), 0)
				if reflect.DeepEqual(a, b) {
					t.Skip("cannot mutate this field's type")
				}
				if got := l.seen(mustDiff(t, a, b)); got == DiffTypeNone {
					t.Fatalf("a change of %s.%s is not in the diff", l.name, f.Name)
				}
			})
		}
	}
}

// mutate changes v to a different value.
func mutate(v reflect.Value, depth int) {
	if depth > 4 {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1.5)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		mutate(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mutate(v.Field(i), depth+1)
				return
			}
		}
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		mutate(e, depth+1)
		v.Set(reflect.Append(v, e))
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		e := reflect.New(v.Type().Elem()).Elem()
		mutate(e, depth+1)
		if v.Type().Elem().Kind() == reflect.Interface {
			e = reflect.ValueOf("x")
		}
		v.SetMapIndex(reflect.ValueOf("zz-key").Convert(v.Type().Key()), e)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	}
}

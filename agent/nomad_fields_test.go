package agent

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadJobFieldsImplementedOrRefused walks every field of Nomad's
// api.Job, at any depth, and registers through Nomad's Go client (no
// Canonicalize, as Nomad's CLI sends) a job with that one field set to a
// non-empty value. Each field must be either refused with a 400 that names
// it (or the block holding it) and says "Drover does not support", or
// accepted and read back with the value sent: nothing is silently dropped.
// A block that is refused as a whole is not looked into further.
func TestNomadJobFieldsImplementedOrRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("registers a few hundred jobs")
	}
	_, c := startServerAgent(t)
	w := &fieldWalker{t: t, c: c}
	w.walk(nil, reflect.TypeFor[nomad.Job](), "Job", map[reflect.Type]bool{})
	t.Logf("%d fields accepted and read back, %d refused by name, %d server-owned", w.accepted, w.refused, w.serverOwned)
	if w.accepted == 0 || w.refused == 0 {
		t.Fatalf("walk found %d accepted and %d refused fields", w.accepted, w.refused)
	}
}

// pathStep is one step from the job to a field: a struct field by name,
// element 0 of a slice, or key "k" of a map.
type pathStep struct {
	field string
	elem  bool
	key   bool
}

type fieldWalker struct {
	t                              *testing.T
	c                              *nomad.Client
	n                              int
	accepted, refused, serverOwned int
}

// serverOwnedFields are set by the server whatever a register sends, in
// Nomad as in Drover.
var serverOwnedFields = map[string]bool{
	"Job.Status": true, "Job.StatusDescription": true, "Job.Stable": true, "Job.Version": true,
	"Job.SubmitTime": true, "Job.CreateIndex": true, "Job.ModifyIndex": true, "Job.JobModifyIndex": true,
}

// identityFields are the base job's own; every probe sets them.
var identityFields = map[string]bool{"Job.ID": true, "Job.TaskGroups": true, "Job.TaskGroups[0].Tasks": true}

// walk visits the fields of struct type t, reached by steps from the job.
func (w *fieldWalker) walk(steps []pathStep, t reflect.Type, path string, onPath map[reflect.Type]bool) {
	if onPath[t] || len(steps) > 12 {
		return
	}
	onPath[t] = true
	defer delete(onPath, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		fs := append(append([]pathStep(nil), steps...), pathStep{field: f.Name})
		fp := path + "." + f.Name
		if serverOwnedFields[fp] {
			w.serverOwned++
			continue
		}
		inner, innerSteps, innerPath, container := containerOf(f.Type, fs, fp)
		if !container {
			if !identityFields[fp] {
				w.probeLeaf(fs, fp, t.Name()+"."+f.Name, f.Type)
			}
			continue
		}
		if !identityFields[fp] {
			leafSteps, leafName, leafType, ok := firstLeaf(innerSteps, inner, onPath)
			if !ok {
				continue
			}
			if w.refusedAt(leafSteps, leafName, leafType, fp) {
				continue // the whole block is refused
			}
		}
		w.walk(innerSteps, inner, innerPath, onPath)
	}
}

// containerOf reports whether a field of type ft holds structs to walk
// into, and the struct type, steps and path of the one the probes use.
func containerOf(ft reflect.Type, steps []pathStep, path string) (reflect.Type, []pathStep, string, bool) {
	switch {
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && ft.Elem() != reflect.TypeFor[time.Time]():
		return ft.Elem(), steps, path, true
	case ft.Kind() == reflect.Slice && elemStruct(ft.Elem()) != nil:
		return elemStruct(ft.Elem()), append(steps, pathStep{elem: true}), path + "[0]", true
	case ft.Kind() == reflect.Map && elemStruct(ft.Elem()) != nil:
		return elemStruct(ft.Elem()), append(steps, pathStep{key: true}), path + `["k"]`, true
	}
	return nil, nil, "", false
}

func elemStruct(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]() {
		return t
	}
	return nil
}

// firstLeaf finds the first non-container field at or below struct t.
func firstLeaf(steps []pathStep, t reflect.Type, onPath map[reflect.Type]bool) ([]pathStep, string, reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		fs := append(append([]pathStep(nil), steps...), pathStep{field: f.Name})
		inner, innerSteps, _, container := containerOf(f.Type, fs, "")
		if !container {
			return fs, t.Name() + "." + f.Name, f.Type, true
		}
		if onPath[inner] || inner == t {
			continue
		}
		if s, n, lt, ok := firstLeaf(innerSteps, inner, onPath); ok {
			return s, n, lt, true
		}
	}
	return nil, "", nil, false
}

// probeLeaf sets one leaf field and checks it is refused by name or read
// back unchanged.
func (w *fieldWalker) probeLeaf(steps []pathStep, path, name string, ft reflect.Type) {
	if w.refusedAt(steps, name, ft, path) {
		return
	}
	w.accepted++
}

// refusedAt registers a job with the leaf at steps set, and reports
// whether it was refused naming block or a block holding it. A job that
// is accepted must read back with the value sent; any other answer fails
// the test.
func (w *fieldWalker) refusedAt(steps []pathStep, name string, ft reflect.Type, block string) bool {
	w.t.Helper()
	w.n++
	id := fmt.Sprintf("fields-%d", w.n)
	job := baseProbeJob(id)
	want := sampleValue(name, ft)
	leaf := locate(reflect.ValueOf(job), steps, true)
	leaf.Set(want)
	if extra, ok := companions[name]; ok {
		extra(locateParent(reflect.ValueOf(job), steps))
	}
	if strings.HasPrefix(name, "Port.") {
		portCompanion(locateParent(reflect.ValueOf(job), steps), steps)
	}
	if steps[0].field == "Periodic" || steps[0].field == "ParameterizedJob" {
		job.Type = new("batch") // only batch jobs may be periodic or parameterized
	}
	label := stepsPath(steps)
	if strings.HasPrefix(label, "Job.TaskGroups[0].Tasks[0].VolumeMounts") {
		// A mount names a group volume and has a destination.
		vm := job.TaskGroups[0].Tasks[0].VolumeMounts[0]
		if vm.Volume == nil {
			vm.Volume = new("v")
		}
		if vm.Destination == nil {
			vm.Destination = new("/data")
		}
		job.TaskGroups[0].Volumes = map[string]*nomad.VolumeRequest{*vm.Volume: {Name: *vm.Volume, Type: "host", Source: "data"}}
	}
	if strings.HasPrefix(label, "Job.TaskGroups[0].Tasks[0].Lifecycle") {
		// A group of lifecycle tasks only is invalid, as in Nomad.
		tg := job.TaskGroups[0]
		tg.Tasks = append(tg.Tasks, &nomad.Task{Name: "main", Driver: "mock_driver", Config: map[string]any{"run_for": "1s"}})
	}
	_, _, err := w.c.Jobs().Register(job, nil)
	if err != nil {
		var ue nomad.UnexpectedResponseError
		if !errors.As(err, &ue) || ue.StatusCode() != http.StatusBadRequest {
			w.t.Errorf("%s: register failed without a 400: %v", label, err)
			return true
		}
		for p := label; ; {
			// Job validation names fields from the job down (no "Job.").
			if strings.Contains(ue.Body(), p+": Drover does not support") ||
				strings.Contains(ue.Body(), strings.TrimPrefix(p, "Job.")+": Drover does not support") {
				w.refused++
				return strings.HasPrefix(block, p)
			}
			cut := strings.LastIndexAny(p, ".[")
			if cut < 0 {
				break
			}
			p = p[:cut]
		}
		w.t.Errorf("%s: refused with a 400 that does not say Drover does not support it: %s", label, ue.Body())
		return true
	}
	got, _, err := w.c.Jobs().Info(id, nil)
	if err != nil {
		w.t.Errorf("%s: reading the job back: %v", label, err)
		return true
	}
	back := locate(reflect.ValueOf(got), readBackSteps(steps), false)
	if !back.IsValid() || !reflect.DeepEqual(deref(back), deref(want)) {
		w.t.Errorf("%s: accepted, but read back as %v; sent %v (silently dropped or changed)", label, show(back), show(want))
	}
	return false
}

// baseProbeJob is the smallest job Nomad's CLI would send for
// job "<id>" { group "g" { task "t" { driver = "mock_driver" config { run_for = "1s" } } } }.
func baseProbeJob(id string) *nomad.Job {
	return &nomad.Job{ID: new(id), TaskGroups: []*nomad.TaskGroup{{
		Name:  new("g"),
		Tasks: []*nomad.Task{{Name: "t", Driver: "mock_driver", Config: map[string]any{"run_for": "1s"}}},
	}}}
}

// readBackSteps maps where a field is sent to where Drover keeps it: the
// job-level reschedule and migrate blocks live on in every group.
func readBackSteps(steps []pathStep) []pathStep {
	if len(steps) > 0 && (steps[0].field == "Reschedule" || steps[0].field == "Migrate") {
		group := "ReschedulePolicy"
		if steps[0].field == "Migrate" {
			group = "Migrate"
		}
		return append([]pathStep{{field: "TaskGroups"}, {elem: true}, {field: group}}, steps[1:]...)
	}
	return steps
}

// locate walks steps from v (a pointer to a struct), allocating what is
// missing when create is set; it returns the zero Value when something is
// missing and create is not set.
func locate(v reflect.Value, steps []pathStep, create bool) reflect.Value {
	for _, s := range steps {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !create {
					return reflect.Value{}
				}
				v.Set(newElem(v.Type().Elem()))
			}
			v = v.Elem()
		}
		switch {
		case s.elem:
			if v.Len() == 0 {
				if !create {
					return reflect.Value{}
				}
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
				initElem(v.Index(0).Addr())
			}
			v = v.Index(0)
		case s.key:
			if v.IsNil() {
				if !create {
					return reflect.Value{}
				}
				v.Set(reflect.MakeMap(v.Type()))
			}
			e := v.MapIndex(reflect.ValueOf("k"))
			if !e.IsValid() {
				if !create {
					return reflect.Value{}
				}
				e = newElem(v.Type().Elem().Elem())
				v.SetMapIndex(reflect.ValueOf("k"), e)
			}
			v = e // a pointer: what it points to is settable
		default:
			v = v.FieldByName(s.field)
		}
	}
	return v
}

// locateParent returns the struct holding the leaf at steps.
func locateParent(v reflect.Value, steps []pathStep) reflect.Value {
	p := locate(v, steps[:len(steps)-1], true)
	for p.Kind() == reflect.Pointer {
		p = p.Elem()
	}
	return p
}

// newElem returns a new *T, with the fields a valid object of T needs.
func newElem(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	initElem(p)
	return p
}

// initElem sets, on a new object (p points to it), the fields a valid one
// needs: a service is Nomad-provided and has a port, a check is a tcp
// check with an interval and timeout, run for task "t".
func initElem(p reflect.Value) {
	switch x := p.Interface().(type) {
	case *nomad.Constraint:
		x.LTarget = "${attr.kernel.name}"
	case *nomad.Affinity:
		x.LTarget, x.Operand, x.RTarget = "${node.datacenter}", "=", "dc1"
	case *nomad.Spread:
		x.Attribute = "${node.datacenter}"
	case *nomad.SpreadTarget:
		x.Value = "dc1"
	case *nomad.Service:
		x.Provider, x.PortLabel = "nomad", "8080"
	case *nomad.ServiceCheck:
		x.Type, x.Interval, x.Timeout, x.TaskName = "tcp", 10*time.Second, 2*time.Second, "t"
	case *nomad.Template:
		x.EmbeddedTmpl, x.DestPath = new("x"), new("local/out")
	case *nomad.TaskArtifact:
		x.GetterSource = new("https://example.com/app.tar.gz")
	}
}

// companions set what a sample needs beside it to be a valid job.
var companions = map[string]func(parent reflect.Value){
	// A limited reschedule policy needs an interval.
	"ReschedulePolicy.Attempts": func(p reflect.Value) { p.FieldByName("Interval").Set(reflect.ValueOf(new(time.Hour))) },
	// A template has either source or data.
	"Template.SourcePath": func(p reflect.Value) { p.FieldByName("EmbeddedTmpl").SetZero() },
	// A scaling block needs a max.
	"ScalingPolicy.Min":     scalingMax,
	"ScalingPolicy.Enabled": scalingMax,
	"ScalingPolicy.Policy":  scalingMax,
	"ScalingPolicy.Type":    scalingMax,
	// A periodic block needs a spec (and a batch job: see refusedAt).
	"PeriodicConfig.Enabled":         periodicSpec,
	"PeriodicConfig.SpecType":        periodicSpec,
	"PeriodicConfig.ProhibitOverlap": periodicSpec,
	"PeriodicConfig.TimeZone":        periodicSpec,
	// A host volume names its type and source.
	"VolumeRequest.Name":     hostVolume,
	"VolumeRequest.ReadOnly": hostVolume,
	"VolumeRequest.Type":     hostVolume,
	"VolumeRequest.Source":   hostVolume,
	// A lifecycle block needs a hook (and a main task beside it: see
	// refusedAt).
	"TaskLifecycle.Sidecar": func(p reflect.Value) { p.FieldByName("Hook").SetString("prestart") },
	// auto_promote needs a canary.
	"UpdateStrategy.AutoPromote": func(p reflect.Value) { p.FieldByName("Canary").Set(reflect.ValueOf(new(1))) },
}

// portCompanion makes a probed port valid: it needs a label, and a port in
// ReservedPorts a static value.
func portCompanion(p reflect.Value, steps []pathStep) {
	if p.FieldByName("Label").String() == "" {
		p.FieldByName("Label").SetString("p")
	}
	if strings.Contains(stepsPath(steps), "ReservedPorts") && p.FieldByName("Value").Int() == 0 {
		p.FieldByName("Value").SetInt(8080)
	}
}

func hostVolume(p reflect.Value) {
	for field, v := range map[string]string{"Name": "k", "Type": "host", "Source": "data"} {
		if p.FieldByName(field).String() == "" {
			p.FieldByName(field).SetString(v)
		}
	}
}

func scalingMax(p reflect.Value) { p.FieldByName("Max").Set(reflect.ValueOf(new(int64(7)))) }

func periodicSpec(p reflect.Value) { p.FieldByName("Spec").Set(reflect.ValueOf(new("@daily"))) }

// sampleOverrides are non-empty samples that are also valid, for the
// fields whose generic sample would fail validation.
var sampleOverrides = map[string]any{
	"Job.Name": "renamed", "Job.Type": "batch", "Job.Region": "global", "Job.Namespace": "default",
	"Job.Priority": 77, "Job.Datacenters": []string{"dc9"}, "Job.NodePool": "all",
	"TaskGroup.Name": "g2", "TaskGroup.Count": 3,
	"Task.Name": "t2", "Task.Driver": "mock", "Task.User": "nobody", "Task.KillSignal": "SIGINT",
	"Task.Config":        map[string]any{"run_for": "2s"},
	"Constraint.LTarget": "${attr.os.name}", "Constraint.RTarget": "linux", "Constraint.Operand": "!=",
	"RestartPolicy.Mode": "delay", "RestartPolicy.Interval": time.Hour,
	"ReschedulePolicy.DelayFunction": "fibonacci",
	"MigrateStrategy.HealthCheck":    "task_states",
	// An update block's sample must be valid beside Nomad's defaults:
	// one canary in a group of one, deadlines in order.
	"UpdateStrategy.HealthCheck": "task_states", "UpdateStrategy.Canary": 1,
	"UpdateStrategy.HealthyDeadline": time.Minute, "UpdateStrategy.ProgressDeadline": time.Hour,
	"Service.PortLabel": "8081", "Service.AddressMode": "host", "Service.TaskName": "t",
	"Service.OnUpdate": "require_healthy", "Service.Provider": "nomad",
	"ServiceCheck.Type": "tcp", "ServiceCheck.Protocol": "https", "ServiceCheck.PortLabel": "8082",
	"ServiceCheck.AddressMode": "host", "ServiceCheck.InitialStatus": "passing",
	"ServiceCheck.Method": "POST", "ServiceCheck.OnUpdate": "require_healthy", "ServiceCheck.TaskName": "t",
	"Template.ChangeMode": "noop", "Template.ChangeSignal": "SIGUSR1", "Template.Perms": "0600",
	"Template.LeftDelim": "[[", "Template.RightDelim": "]]",
	"NetworkResource.Mode": "host",
	"ScalingPolicy.Min":    1, "ScalingPolicy.Max": 7, "ScalingPolicy.Type": "horizontal",
	"Resources.CPU": 250, "Resources.MemoryMB": 64, "Resources.Cores": 1, "Resources.DiskMB": 20,
	"PeriodicConfig.Spec": "@daily", "PeriodicConfig.Specs": []string{"@daily", "0 3 * * *"},
	"PeriodicConfig.SpecType": "cron", "PeriodicConfig.TimeZone": "Europe/Paris",
	"ParameterizedJobConfig.Payload": "required",
	"TaskLifecycle.Hook":             "prestart",
	"TaskArtifact.GetterMode":        "file",
	"Affinity.Operand":               "!=", "Affinity.Weight": -30,
	"Spread.Weight": 80, "SpreadTarget.Percent": 40,
	"DisconnectStrategy.Reconcile": "keep_original",
	"Resources.MemoryMaxMB":        512,
	"VolumeRequest.Name":           "k", "VolumeRequest.Type": "host",
	"EphemeralDisk.SizeMB": 500,
}

// sampleValue returns a non-empty value of type t for the field name
// ("Type.Field").
func sampleValue(name string, t reflect.Type) reflect.Value {
	base := t
	if t.Kind() == reflect.Pointer {
		base = t.Elem()
	}
	var v reflect.Value
	if o, ok := sampleOverrides[name]; ok {
		v = reflect.ValueOf(o).Convert(base)
	} else {
		v = genericSample(base)
	}
	if t.Kind() == reflect.Pointer {
		p := reflect.New(base)
		p.Elem().Set(v)
		return p
	}
	return v
}

func genericSample(t reflect.Type) reflect.Value {
	if t == reflect.TypeFor[time.Duration]() {
		return reflect.ValueOf(3 * time.Second)
	}
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString("x-sample")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Slice:
		v = reflect.MakeSlice(t, 1, 1)
		v.Index(0).Set(genericSample(t.Elem()))
	case reflect.Map:
		v = reflect.MakeMap(t)
		v.SetMapIndex(reflect.ValueOf("k").Convert(t.Key()), genericSample(t.Elem()))
	case reflect.Interface:
		v.Set(reflect.ValueOf("x-sample"))
	default:
		panic("no sample for " + t.String())
	}
	return v
}

func deref(v reflect.Value) any {
	for v.IsValid() && v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

func show(v reflect.Value) string { return fmt.Sprintf("%#v", deref(v)) }

func stepsPath(steps []pathStep) string {
	var b strings.Builder
	b.WriteString("Job")
	for _, s := range steps {
		switch {
		case s.elem:
			b.WriteString("[0]")
		case s.key:
			b.WriteString(`["k"]`)
		default:
			b.WriteString("." + s.field)
		}
	}
	return b.String()
}

// TestNomadServerSideDefaults registers, through Nomad's Go client without
// Canonicalize (as Nomad's CLI does), a job whose group has no count and
// partial restart, reschedule and migrate blocks, some at the job level.
// The server fills in what Nomad's server does: count 1, and every absent
// argument from the job type's defaults, job-level blocks under the
// group's own.
func TestNomadServerSideDefaults(t *testing.T) {
	a, c := startServerAgent(t)
	registerNode(t, a, "n1")
	job := &nomad.Job{
		ID:         new("defaults"),
		Reschedule: &nomad.ReschedulePolicy{Attempts: new(4), Interval: new(2 * time.Hour)},
		Migrate:    &nomad.MigrateStrategy{MaxParallel: new(3)},
		TaskGroups: []*nomad.TaskGroup{{
			Name:             new("g"),
			RestartPolicy:    &nomad.RestartPolicy{Attempts: new(5)},
			ReschedulePolicy: &nomad.ReschedulePolicy{Delay: new(11 * time.Second)},
			Migrate:          &nomad.MigrateStrategy{HealthCheck: new("task_states")},
			Tasks:            []*nomad.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}}},
		}},
	}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	got, _, err := c.Jobs().Info("defaults", nil)
	if err != nil {
		t.Fatal(err)
	}
	tg := got.TaskGroups[0]
	if tg.Count == nil || *tg.Count != 1 {
		t.Errorf("Count = %v; want 1 (Nomad's default for a null count)", show(reflect.ValueOf(tg.Count)))
	}
	wantRestart := nomad.RestartPolicy{Attempts: new(5), Interval: new(30 * time.Minute), Delay: new(15 * time.Second), Mode: new("fail"),
		RenderTemplates: new(false)}
	if tg.RestartPolicy == nil || !reflect.DeepEqual(*tg.RestartPolicy, wantRestart) {
		t.Errorf("RestartPolicy = %s; want %s", show(reflect.ValueOf(tg.RestartPolicy)), show(reflect.ValueOf(wantRestart)))
	}
	wantResched := nomad.ReschedulePolicy{Attempts: new(4), Interval: new(2 * time.Hour), Delay: new(11 * time.Second),
		DelayFunction: new("exponential"), MaxDelay: new(time.Hour), Unlimited: new(false)}
	if tg.ReschedulePolicy == nil || !reflect.DeepEqual(*tg.ReschedulePolicy, wantResched) {
		t.Errorf("ReschedulePolicy = %s; want %s", show(reflect.ValueOf(tg.ReschedulePolicy)), show(reflect.ValueOf(wantResched)))
	}
	wantMigrate := nomad.MigrateStrategy{MaxParallel: new(3), HealthCheck: new("task_states"),
		MinHealthyTime: new(10 * time.Second), HealthyDeadline: new(5 * time.Minute)}
	if tg.Migrate == nil || !reflect.DeepEqual(*tg.Migrate, wantMigrate) {
		t.Errorf("Migrate = %s; want %s", show(reflect.ValueOf(tg.Migrate)), show(reflect.ValueOf(wantMigrate)))
	}
	// Only service jobs migrate, as in Nomad.
	job.ID, job.Type = new("defaults-batch"), new("batch")
	if _, _, err := c.Jobs().Register(job, nil); err == nil || !strings.Contains(err.Error(), `job type "batch" does not allow a migrate block`) {
		t.Errorf("batch job with migrate: %v", err)
	}
	if ev := waitEval(t, c, resp.EvalID); ev.Status != "complete" {
		t.Fatalf("eval = %+v", ev)
	}
	allocs, _, err := c.Jobs().Allocations("defaults", false, nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("allocations = %d, %v; want the one a null count means", len(allocs), err)
	}
}

// TestNomadJobValidate drives PUT /v1/validate/job with Nomad's client, as
// `nomad job validate` does: a valid job has no problems; an invalid one
// and one asking for something Drover does not support list them, with
// 200, so Nomad's CLI prints them.
func TestNomadJobValidate(t *testing.T) {
	_, c := startServerAgent(t)
	ok, _, err := c.Jobs().Validate(baseProbeJob("valid"), nil)
	if err != nil || ok.Error != "" || len(ok.ValidationErrors) != 0 || !ok.DriverConfigValidated {
		t.Fatalf("valid job: %+v, %v", ok, err)
	}
	bad := baseProbeJob("bad")
	bad.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "soon"}
	bad.Multiregion = &nomad.Multiregion{Regions: []*nomad.MultiregionRegion{{Name: "west"}}}
	resp, _, err := c.Jobs().Validate(bad, nil)
	if err != nil || len(resp.ValidationErrors) != 1 || !strings.Contains(resp.Error, "Job.Multiregion: Drover does not support multiregion jobs") {
		t.Fatalf("unsupported field: %+v, %v", resp, err)
	}
	bad.Multiregion = nil
	resp, _, err = c.Jobs().Validate(bad, nil)
	if err != nil || len(resp.ValidationErrors) != 1 || !strings.Contains(resp.Error, "TaskGroups[0].Tasks[0].Config.run_for") {
		t.Fatalf("bad driver config: %+v, %v", resp, err)
	}
	if jobs, _, err := c.Jobs().List(nil); err != nil || len(jobs) != 0 {
		t.Fatalf("validation registered something: %v, %v", jobs, err)
	}
}

package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/drover-project/drover/structs"
)

// DecodeAPIJob turns a job in the JSON shape of Nomad's HTTP API into a
// Drover job, doing what Nomad's server does with what Nomad's CLI and Go
// client send (they send nulls, not defaults). v is the job object decoded
// with json.Decoder.UseNumber; path names it in errors ("Job"). It:
//
//   - refuses every field Drover does not act on unless its value is empty
//     (null, false, 0, "", [] or {}), naming the field's path and the
//     feature: "Job.TaskGroups[0].Spreads: Drover does not support spread
//     blocks";
//   - gives a null or absent group count Nomad's default, 1;
//   - lays a partial restart, reschedule, migrate or update block over the
//     job type's defaults, argument by argument (a null argument takes the
//     default), and copies the job-level reschedule, migrate and update
//     blocks into every group, under the group's own (the job keeps its
//     update block too, as Nomad's does).
//
// The rest of Nomad's defaults (priority, datacenters, resources, kill
// timeout, absent policies) are structs.Job.Canonicalize's, which the
// server runs on every job however it arrived. v is modified.
// Errors are *structs.ValidationError.
func DecodeAPIJob(path string, v map[string]any) (*structs.Job, error) {
	var errs []structs.FieldError
	applyAPIDefaults(path, v, &errs)
	checkJSONFields(path, v, reflect.TypeFor[structs.Job](), &errs)
	if len(errs) > 0 {
		return nil, &structs.ValidationError{Errors: errs}
	}
	buf, err := json.Marshal(v)
	if err != nil {
		return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: path, Message: err.Error()}}}
	}
	job := &structs.Job{}
	if err := json.Unmarshal(buf, job); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: path + "." + te.Field,
				Message: fmt.Sprintf("expected %s, got JSON %s", jsonKind(te.Type), te.Value)}}}
		}
		return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: path, Message: err.Error()}}}
	}
	if errs := unsupportedValues(path, job); len(errs) > 0 {
		return nil, &structs.ValidationError{Errors: errs}
	}
	return job, nil
}

// unsupportedValues refuses, by name, values of modelled fields that ask
// for what Drover does not do: a named (alternate) workload identity.
func unsupportedValues(path string, job *structs.Job) []structs.FieldError {
	var errs []structs.FieldError
	for i, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for k, t := range tg.Tasks {
			if t != nil && t.Identity != nil && t.Identity.Name != "" && t.Identity.Name != structs.WorkloadIdentityDefaultName {
				errs = append(errs, structs.FieldError{
					Field:   fmt.Sprintf("%s.TaskGroups[%d].Tasks[%d].Identity.Name", path, i, k),
					Message: unsupportedPrefix + "named workload identities (only the default identity, whose token lets the task read Drover's variables and services)"})
			}
		}
	}
	return errs
}

// DecodeAPIJobBytes decodes src, a JSON job object, with DecodeAPIJob.
func DecodeAPIJobBytes(path string, src []byte) (*structs.Job, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: path, Message: "invalid JSON: " + err.Error()}}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &structs.ValidationError{Errors: []structs.FieldError{{Field: path, Message: "must be a JSON object"}}}
	}
	return DecodeAPIJob(path, obj)
}

// applyAPIDefaults fills in, on the decoded JSON, the defaults whose
// absence cannot be seen once the job is a structs.Job (null and 0 are
// both 0 there). The job-level Reschedule and Migrate keys are consumed.
func applyAPIDefaults(path string, job map[string]any, errs *[]structs.FieldError) {
	jobType := structs.JobTypeService
	if _, t, ok := lookupKey(job, "Type"); ok {
		if s, isStr := t.(string); isStr && s != "" {
			jobType = s
		}
	}
	dropIfCanonicalUpdate(job)
	jobUpdate := objectAt(job, "Update")
	if jobUpdate != nil {
		fillNulls(jobUpdate, defUpdate)
	}
	if key, d, ok := lookupKey(job, "Dispatched"); ok && d == true {
		// Nomad refuses it too: only a dispatch makes a dispatched job.
		*errs = append(*errs, structs.FieldError{Field: path + "." + key,
			Message: unsupportedPrefix + "registering a dispatched job (Dispatched): dispatch a parameterized job instead"})
	}
	if p := objectAt(job, "Periodic"); p != nil {
		fillNulls(p, nomadDefaultPeriodic)
	}
	preferenceDefaults(job)
	jobResched := takeObject(path, job, "Reschedule", reflect.TypeFor[structs.ReschedulePolicy](), errs)
	jobMigrate := takeObject(path, job, "Migrate", reflect.TypeFor[structs.MigrateStrategy](), errs)

	// The type's defaults, as JSON, once per job; only read below (the
	// values they lend to the groups are scalars).
	defRestart := toJSONObject(structs.DefaultRestartPolicy(jobType))
	defResched := toJSONObject(structs.DefaultReschedulePolicy(jobType))
	defMigrate := toJSONObject(structs.DefaultMigrateStrategy())

	_, groups, _ := lookupKey(job, "TaskGroups")
	list, _ := groups.([]any)
	for _, g := range list {
		tg, ok := g.(map[string]any)
		if !ok {
			continue // reported by the decoder or validation
		}
		if key, count, ok := lookupKey(tg, "Count"); !ok || count == nil {
			if key == "" {
				key = "Count"
			}
			tg[key] = json.Number("1")
		}
		if sp := objectAt(tg, "Scaling"); sp != nil {
			// Nomad's server defaults: enabled, min the group's count,
			// max -1 (refused by validation: max is required).
			_, count, _ := lookupKey(tg, "Count")
			fillNulls(sp, map[string]any{"Enabled": true, "Min": count, "Max": json.Number("-1")})
		}
		restart := defRestart
		if rp := objectAt(tg, "RestartPolicy"); rp != nil {
			fillNulls(rp, restart)
			restart = rp
		}
		if rs := overlay(jobResched, objectAt(tg, "ReschedulePolicy")); rs != nil {
			limitedByAttempts(rs)
			fillNulls(rs, defResched)
			setKey(tg, "ReschedulePolicy", rs)
		}
		if m := overlay(jobMigrate, objectAt(tg, "Migrate")); m != nil {
			fillNulls(m, defMigrate)
			setKey(tg, "Migrate", m)
		}
		preferenceDefaults(tg)
		dropIfCanonicalUpdate(tg)
		if u := overlay(jobUpdate, objectAt(tg, "Update")); u != nil {
			fillNulls(u, defUpdate)
			setKey(tg, "Update", u)
		}
		if ed := objectAt(tg, "EphemeralDisk"); ed != nil {
			fillNulls(ed, nomadDefaultEphemeralDisk)
		}
		dropDefaultCluster(tg)
		_, tasks, _ := lookupKey(tg, "Tasks")
		taskList, _ := tasks.([]any)
		for _, tv := range taskList {
			if task, ok := tv.(map[string]any); ok {
				preferenceDefaults(task)
				if lc := objectAt(task, "LogConfig"); lc != nil {
					fillNulls(lc, nomadDefaultLogConfig)
				}
				// A task's restart block refines its group's, argument
				// by argument, as Nomad's server merges them.
				if rp := objectAt(task, "RestartPolicy"); rp != nil {
					fillNulls(rp, restart)
				}
				dropPrivatePropagation(task)
				dropDefaultCluster(task)
				templateDefaults(task)
				artifactDefaults(task)
			}
		}
	}
}

// preferenceDefaults gives each affinity and spread of obj (a job, group
// or task) Nomad's weight, 50, when its weight is null or absent (Nomad's
// server canonicalizes them so); an explicit 0 stays, for validation to
// refuse.
func preferenceDefaults(obj map[string]any) {
	for _, key := range []string{"Affinities", "Spreads"} {
		_, lv, _ := lookupKey(obj, key)
		list, _ := lv.([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				fillNulls(m, map[string]any{"Weight": json.Number("50")})
			}
		}
	}
}

// templateDefaults gives each of the task's templates Nomad's defaults
// for its null arguments, as Nomad's server does (api.Template's
// Canonicalize): a null splay is 5s, an explicit 0 stays 0.
func templateDefaults(task map[string]any) {
	_, tv, _ := lookupKey(task, "Templates")
	list, _ := tv.([]any)
	for _, e := range list {
		t, ok := e.(map[string]any)
		if !ok {
			continue
		}
		fillNulls(t, nomadTemplateDefaults)
		if _, sig, _ := lookupKey(t, "ChangeSignal"); sig == nil {
			if _, mode, _ := lookupKey(t, "ChangeMode"); mode == structs.TemplateChangeModeSignal {
				setKey(t, "ChangeSignal", structs.DefaultTemplateChangeSignal)
			}
		} else if s, isStr := sig.(string); isStr {
			setKey(t, "ChangeSignal", strings.ToUpper(s))
		}
		if cs := objectAt(t, "ChangeScript"); cs != nil {
			fillNulls(cs, nomadChangeScriptDefaults)
		}
	}
}

// artifactDefaults gives each of the task's artifacts Nomad's defaults
// for its null arguments, as Nomad's server does (api.TaskArtifact's
// Canonicalize): mode any, insecure false, and a null destination local/
// (local/<the source's last element> in file mode). An empty destination
// stays: it is the task directory itself.
func artifactDefaults(task map[string]any) {
	_, av, _ := lookupKey(task, "Artifacts")
	list, _ := av.([]any)
	for _, e := range list {
		a, ok := e.(map[string]any)
		if !ok {
			continue
		}
		fillNulls(a, map[string]any{"GetterMode": structs.GetterModeAny, "GetterInsecure": false})
		if _, dest, _ := lookupKey(a, "RelativeDest"); dest == nil {
			_, src, _ := lookupKey(a, "GetterSource")
			_, mode, _ := lookupKey(a, "GetterMode")
			s, _ := src.(string)
			m, _ := mode.(string)
			setKey(a, "RelativeDest", structs.DefaultArtifactDest(s, m))
		}
	}
}

var (
	nomadTemplateDefaults = map[string]any{
		"ChangeMode": structs.DefaultTemplateChangeMode, "Splay": json.Number(strconv.FormatInt(int64(structs.DefaultTemplateSplay), 10)),
		"Perms": structs.DefaultTemplatePerms, "LeftDelim": structs.DefaultTemplateLeftDelim,
		"RightDelim": structs.DefaultTemplateRightDelim,
	}
	nomadChangeScriptDefaults = map[string]any{
		"Args": []any{}, "Timeout": json.Number(strconv.FormatInt(int64(structs.DefaultChangeScriptTimeout), 10)),
	}
)

// defUpdate is Nomad's update block defaults, as JSON; only read.
var defUpdate = toJSONObject(structs.DefaultUpdateStrategy())

// dropIfCanonicalUpdate removes obj's (a job's or a group's) Update when it
// is exactly what Nomad's Go client fills in when it canonicalizes a
// service job without an update block: every argument present and equal
// to Nomad's default. A job without an update block rolls out at once in
// Drover (as before deployments existed), so such a block is taken as
// absent; a block with any argument left null, or any other value, is the
// user's and is kept.
func dropIfCanonicalUpdate(obj map[string]any) {
	k, v, ok := lookupKey(obj, "Update")
	if !ok {
		return
	}
	m, isObj := v.(map[string]any)
	if !isObj || len(m) != len(defUpdate) {
		return
	}
	for field, dv := range defUpdate {
		_, fv, present := lookupKey(m, field)
		if !present || !sameJSON(fv, dv) {
			return
		}
	}
	delete(obj, k)
}

// Nomad's defaults for blocks Drover does not model, as Nomad's Go client
// fills them in (api.Job.Canonicalize). A tool that canonicalizes before
// sending (as Nomad's CLI does not) sends them for blocks the user never
// wrote; such a block asks for nothing beyond what an absent one does, so
// it is taken as absent. Any other value is refused.
var (
	// nomadDefaultPeriodic is what Nomad's API gives a periodic block's
	// null fields (api.PeriodicConfig.Canonicalize).
	nomadDefaultPeriodic = map[string]any{"Enabled": true, "SpecType": structs.PeriodicSpecCron,
		"ProhibitOverlap": false, "TimeZone": "UTC"}
)

// Nomad's defaults for the null arguments of blocks Drover models, as
// Nomad's server fills them in.
var (
	nomadDefaultEphemeralDisk = map[string]any{"Sticky": false, "Migrate": false,
		"SizeMB": json.Number(strconv.Itoa(structs.DefaultEphemeralDiskMB))}
	nomadDefaultLogConfig = map[string]any{"MaxFiles": json.Number(strconv.Itoa(structs.DefaultLogMaxFiles)),
		"MaxFileSizeMB": json.Number(strconv.Itoa(structs.DefaultLogMaxFileSizeMB)), "Disabled": false}
)

// dropPrivatePropagation removes, from each of the task's volume mounts,
// a PropagationMode of "private": Nomad's default, which Nomad's Go
// client fills in, and the only mode Drover has. Any other mode is left
// to be refused by name.
func dropPrivatePropagation(task map[string]any) {
	_, mv, _ := lookupKey(task, "VolumeMounts")
	list, _ := mv.([]any)
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if k, mode, ok := lookupKey(m, "PropagationMode"); ok && mode == structs.VolumeMountPropagationPrivate {
			delete(m, k)
		}
	}
}

// dropDefaultCluster removes, from each service of obj (a group or a
// task), the Consul cluster "default" that Nomad's Go client fills in when
// it canonicalizes: it asks for nothing an absent one does not.
func dropDefaultCluster(obj map[string]any) {
	_, svcs, _ := lookupKey(obj, "Services")
	list, _ := svcs.([]any)
	for _, sv := range list {
		s, ok := sv.(map[string]any)
		if !ok {
			continue
		}
		if k, c, ok := lookupKey(s, "Cluster"); ok && c == "default" {
			delete(s, k)
		}
	}
}

// dropIfDefault removes key from obj when its value is an object each of
// whose entries is null or equal to def's entry of the same name.
func dropIfDefault(obj map[string]any, key string, def map[string]any) {
	k, v, ok := lookupKey(obj, key)
	if !ok {
		return
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return
	}
	for field, fv := range m {
		if fv == nil {
			continue
		}
		_, dv, known := lookupKey(def, field)
		if !known || !sameJSON(fv, dv) {
			return
		}
	}
	delete(obj, k)
}

// sameJSON reports whether two decoded JSON values encode the same.
func sameJSON(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

// takeObject removes key from obj and returns its object value (nil when
// absent or null), reporting a non-object value or an unknown field in it.
func takeObject(path string, obj map[string]any, key string, t reflect.Type, errs *[]structs.FieldError) map[string]any {
	k, v, ok := lookupKey(obj, key)
	if !ok {
		return nil
	}
	delete(obj, k)
	if v == nil {
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		*errs = append(*errs, structs.FieldError{Field: path + "." + key, Message: "expected an object"})
		return nil
	}
	checkJSONFields(path+"."+key, m, t, errs)
	return m
}

// overlay returns a new object with base's entries and then top's non-null
// ones, or nil when both are nil.
func overlay(base, top map[string]any) map[string]any {
	if base == nil && top == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range base {
		setKey(out, k, v)
	}
	for k, v := range top {
		if v != nil {
			setKey(out, k, v)
		}
	}
	return out
}

// limitedByAttempts makes a reschedule policy that sets a positive Attempts
// without saying Unlimited a limited one, as the HCL parser does (Nomad's
// service default is unlimited, which ignores attempts).
func limitedByAttempts(rs map[string]any) {
	_, attempts, ok := lookupKey(rs, "Attempts")
	if !ok || emptyJSON(attempts) {
		return
	}
	if _, u, set := lookupKey(rs, "Unlimited"); !set || u == nil {
		setKey(rs, "Unlimited", false)
	}
}

// fillNulls sets every key of defaults that obj lacks or holds as null.
func fillNulls(obj, defaults map[string]any) {
	for k, dv := range defaults {
		if key, v, ok := lookupKey(obj, k); !ok || v == nil {
			if key == "" {
				key = k
			}
			obj[key] = dv
		}
	}
}

// objectAt returns obj[key] when it is an object.
func objectAt(obj map[string]any, key string) map[string]any {
	_, v, _ := lookupKey(obj, key)
	m, _ := v.(map[string]any)
	return m
}

// lookupKey finds key in obj as encoding/json would: the exact name, else
// one equal without regard to case (the first in sorted order, so that
// the answer does not depend on map order; checkJSONFields refuses an
// object holding two such keys). It returns the key as written.
func lookupKey(obj map[string]any, key string) (string, any, bool) {
	if v, ok := obj[key]; ok {
		return key, v, true
	}
	for _, k := range sortedKeys(obj) {
		if strings.EqualFold(k, key) {
			return k, obj[k], true
		}
	}
	return "", nil, false
}

// setKey sets key in obj, replacing an entry whose name differs only in case.
func setKey(obj map[string]any, key string, v any) {
	if k, _, ok := lookupKey(obj, key); ok {
		delete(obj, k)
	}
	obj[key] = v
}

// toJSONObject returns v as decoded JSON (numbers as json.Number).
func toJSONObject(v any) map[string]any {
	buf, err := json.Marshal(v)
	if err != nil {
		panic(err) // v is one of Drover's own policy types
	}
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// DecodeAPIRequest decodes top, a request body that carries a job under
// "Job" (the bodies of Nomad's job register and plan requests), into out,
// a pointer to a struct with a `Job *structs.Job` field. The job goes
// through DecodeAPIJob; the body's other fields are checked as the job's
// are, so a request option Drover does not act on is refused by name.
// Errors are *structs.ValidationError.
func DecodeAPIRequest(top map[string]any, out any) error {
	rv := reflect.ValueOf(out).Elem()
	var errs []structs.FieldError
	var jobObj map[string]any
	if key, v, ok := lookupKey(top, "Job"); ok {
		delete(top, key)
		if v != nil {
			if jobObj, ok = v.(map[string]any); !ok {
				errs = append(errs, structs.FieldError{Field: "Job", Message: "must be a JSON object"})
			}
		}
	}
	checkJSONFields("", top, rv.Type(), &errs)
	if len(errs) > 0 {
		return &structs.ValidationError{Errors: errs}
	}
	buf, err := json.Marshal(top)
	if err == nil {
		err = json.Unmarshal(buf, out)
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: te.Field,
				Message: fmt.Sprintf("expected %s, got JSON %s", jsonKind(te.Type), te.Value)}}}
		}
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "request body", Message: err.Error()}}}
	}
	if jobObj == nil {
		return nil
	}
	job, err := DecodeAPIJob("Job", jobObj)
	if err != nil {
		return err
	}
	rv.FieldByName("Job").Set(reflect.ValueOf(job))
	return nil
}

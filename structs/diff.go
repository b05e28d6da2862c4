package structs

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Job diffs in Nomad's shapes (its JobDiff, TaskGroupDiff, TaskDiff,
// ObjectDiff and FieldDiff), as `job plan` and `job history -p` show them.
//
// The differ is driven by reflection over the job types, so a field added
// to a job type is diffed without code here. Its rules are Nomad's:
//   - a struct's primitive fields, and its maps of primitives (as
//     "Meta[key]"), are its Fields; durations are nanoseconds;
//   - a nested struct (RestartPolicy, Resources, ...) is an Object named
//     after its field, holding its own fields and objects;
//   - a list of strings (Datacenters) is an Object of set members;
//   - a list of structs (Constraints, ...) is diffed as a set: members
//     equal in every field match, the others are Deleted and Added
//     Objects named in the singular ("Constraint");
//   - a map of any values (a task's Config) is an Object of its flattened
//     keys ("args[0]");
//   - groups and tasks are matched by name.
//
// With contextual set, the unchanged fields of a changed object are
// listed too (Type None), as Nomad's plan and history ask; a job's,
// group's and task's own fields list only changes, as in Nomad.

// DiffType says how an element changed.
type DiffType string

// Diff types, as Nomad names them.
const (
	DiffTypeNone    DiffType = "None"
	DiffTypeAdded   DiffType = "Added"
	DiffTypeDeleted DiffType = "Deleted"
	DiffTypeEdited  DiffType = "Edited"
)

// JobDiff is the difference between two versions of a job.
type JobDiff struct {
	Type       DiffType
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the difference between two versions of a group.
// Updates (filled by a plan) counts what the scheduler would do to the
// group's allocations, by Nomad's update names ("create", "in-place
// update", ...).
type TaskGroupDiff struct {
	Type    DiffType
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is the difference between two versions of a task. Annotations
// (filled by a plan) say what the change forces ("forces create/destroy
// update", ...).
type TaskDiff struct {
	Type        DiffType
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// ObjectDiff is the difference between two versions of a nested object.
type ObjectDiff struct {
	Type    DiffType
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// FieldDiff is the difference between two values of one field, both
// rendered as strings ("" when absent).
type FieldDiff struct {
	Type        DiffType
	Name        string
	Old, New    string
	Annotations []string
}

// Fields of a job, group and task the differ leaves out: what the servers
// set, and what is diffed on its own (groups, tasks).
var (
	jobDiffSkip   = map[string]bool{"ID": true, "Status": true, "StatusDescription": true, "Version": true, "Stable": true, "CreateIndex": true, "ModifyIndex": true, "JobModifyIndex": true, "SubmitTime": true, "TaskGroups": true}
	groupDiffSkip = map[string]bool{"Name": true, "Tasks": true}
	taskDiffSkip  = map[string]bool{"Name": true}
)

// Diff returns the difference from j to other (either may be nil: the
// job is Added or Deleted). Jobs with different IDs cannot be compared.
func (j *Job) Diff(other *Job, contextual bool) (*JobDiff, error) {
	d := &JobDiff{Type: DiffTypeNone}
	switch {
	case j == nil && other == nil:
		return d, nil
	case j == nil:
		d.Type, d.ID = DiffTypeAdded, other.ID
	case other == nil:
		d.Type, d.ID = DiffTypeDeleted, j.ID
	case j.ID != other.ID:
		return nil, fmt.Errorf("cannot diff jobs with different IDs: %q and %q", j.ID, other.ID)
	default:
		d.ID = other.ID
	}
	a, b := reflect.ValueOf(j), reflect.ValueOf(other)
	d.Fields = fieldDiffs(flatPrimitives(a, jobDiffSkip), flatPrimitives(b, jobDiffSkip), false)
	d.Objects = objectDiffs(a, b, jobDiffSkip, contextual)
	var oldGroups, newGroups []*TaskGroup
	if j != nil {
		oldGroups = j.TaskGroups
	}
	if other != nil {
		newGroups = other.TaskGroups
	}
	groups, err := taskGroupDiffs(oldGroups, newGroups, contextual)
	if err != nil {
		return nil, err
	}
	d.TaskGroups = groups
	if d.Type == DiffTypeNone && (anyFieldChanged(d.Fields) || anyObjectChanged(d.Objects) ||
		slices.ContainsFunc(groups, func(g *TaskGroupDiff) bool { return g.Type != DiffTypeNone })) {
		d.Type = DiffTypeEdited
	}
	return d, nil
}

// Diff returns the difference from tg to other (either may be nil).
func (tg *TaskGroup) Diff(other *TaskGroup, contextual bool) (*TaskGroupDiff, error) {
	d := &TaskGroupDiff{Type: DiffTypeNone}
	if tg == nil && other == nil {
		return d, nil
	}
	var err error
	if d.Type, d.Name, err = pairDiffType(tg, other, func(g *TaskGroup) string { return g.Name }, "task groups"); err != nil {
		return nil, err
	}
	a, b := reflect.ValueOf(tg), reflect.ValueOf(other)
	d.Fields = fieldDiffs(flatPrimitives(a, groupDiffSkip), flatPrimitives(b, groupDiffSkip), false)
	d.Objects = objectDiffs(a, b, groupDiffSkip, contextual)
	var oldTasks, newTasks []*Task
	if tg != nil {
		oldTasks = tg.Tasks
	}
	if other != nil {
		newTasks = other.Tasks
	}
	tasks, err := taskDiffs(oldTasks, newTasks, contextual)
	if err != nil {
		return nil, err
	}
	d.Tasks = tasks
	return d, nil
}

// Diff returns the difference from t to other (either may be nil).
func (t *Task) Diff(other *Task, contextual bool) (*TaskDiff, error) {
	d := &TaskDiff{Type: DiffTypeNone}
	if t == nil && other == nil {
		return d, nil
	}
	var err error
	if d.Type, d.Name, err = pairDiffType(t, other, func(t *Task) string { return t.Name }, "tasks"); err != nil {
		return nil, err
	}
	a, b := reflect.ValueOf(t), reflect.ValueOf(other)
	d.Fields = fieldDiffs(flatPrimitives(a, taskDiffSkip), flatPrimitives(b, taskDiffSkip), false)
	d.Objects = objectDiffs(a, b, taskDiffSkip, contextual)
	return d, nil
}

// pairDiffType is the diff type and name of two named items, not both
// nil: added, deleted, edited or none; items of different names are an
// error (what names them).
func pairDiffType[T any](a, b *T, name func(*T) string, what string) (DiffType, string, error) {
	switch {
	case a == nil:
		return DiffTypeAdded, name(b), nil
	case b == nil:
		return DiffTypeDeleted, name(a), nil
	case name(a) != name(b):
		return "", "", fmt.Errorf("cannot diff %s with different names: %q and %q", what, name(a), name(b))
	case reflect.DeepEqual(a, b):
		return DiffTypeNone, name(b), nil
	}
	return DiffTypeEdited, name(b), nil
}

func taskGroupDiffs(old, new []*TaskGroup, contextual bool) ([]*TaskGroupDiff, error) {
	return namedDiffs(old, new, func(g *TaskGroup) string { return g.Name },
		func(a, b *TaskGroup) (*TaskGroupDiff, error) { return a.Diff(b, contextual) },
		func(d *TaskGroupDiff) string { return d.Name })
}

func taskDiffs(old, new []*Task, contextual bool) ([]*TaskDiff, error) {
	return namedDiffs(old, new, func(t *Task) string { return t.Name },
		func(a, b *Task) (*TaskDiff, error) { return a.Diff(b, contextual) },
		func(d *TaskDiff) string { return d.Name })
}

// namedDiffs pairs the items of old and new by name (nil items skipped)
// and diffs each pair, an item only in old against nil and one only in
// new from nil; the diffs come sorted by name.
func namedDiffs[T any, D any](old, new []*T, name func(*T) string, diff func(a, b *T) (D, error), diffName func(D) string) ([]D, error) {
	byName := make(map[string]*T, len(new))
	for _, x := range new {
		if x != nil {
			byName[name(x)] = x
		}
	}
	var out []D
	seen := make(map[string]bool, len(old))
	for _, x := range old {
		if x == nil {
			continue
		}
		seen[name(x)] = true
		d, err := diff(x, byName[name(x)])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	for _, x := range new {
		if x == nil || seen[name(x)] {
			continue
		}
		d, err := diff(nil, x)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b D) int { return strings.Compare(diffName(a), diffName(b)) })
	return out, nil
}

// structValue follows pointers to a struct; it returns an invalid Value
// for nil.
func structValue(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	if v.IsValid() && v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v
}

// primitive renders a primitive value as Nomad's flattening does, or
// reports that v is not one.
func primitive(v reflect.Value) (string, bool) {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	case reflect.String:
		return v.String(), true
	}
	return "", false
}

// isPrimitiveKind reports whether values of t are rendered by primitive.
func isPrimitiveKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
}

// flatPrimitives returns the primitive fields of the struct v points at
// and its maps of primitives (as "Name[key]"), minus skip; nil for nil.
func flatPrimitives(v reflect.Value, skip map[string]bool) map[string]string {
	v = structValue(v)
	if !v.IsValid() {
		return nil
	}
	out := map[string]string{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer && isPrimitiveKind(fv.Type().Elem()) {
			// An optional primitive (a group's shutdown_delay): absent
			// when nil.
			if !fv.IsNil() {
				out[f.Name], _ = primitive(fv.Elem())
			}
			continue
		}
		if s, ok := primitive(fv); ok {
			out[f.Name] = s
			continue
		}
		if fv.Kind() == reflect.Map && isPrimitiveKind(fv.Type().Elem()) && fv.Type().Key().Kind() == reflect.String {
			iter := fv.MapRange()
			for iter.Next() {
				s, _ := primitive(iter.Value())
				out[f.Name+"["+iter.Key().String()+"]"] = s
			}
		}
	}
	return out
}

// objectDiffs returns the diffs of the nested objects of the structs a
// and b point at (either may be nil), minus skip, sorted by name.
func objectDiffs(a, b reflect.Value, skip map[string]bool, contextual bool) []*ObjectDiff {
	a, b = structValue(a), structValue(b)
	var t reflect.Type
	switch {
	case a.IsValid():
		t = a.Type()
	case b.IsValid():
		t = b.Type()
	default:
		return nil
	}
	field := func(v reflect.Value, i int) reflect.Value {
		if !v.IsValid() {
			return reflect.Zero(t.Field(i).Type)
		}
		return v.Field(i)
	}
	var out []*ObjectDiff
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		x, y := field(a, i), field(b, i)
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct, ft.Kind() == reflect.Struct:
			if d := objectDiff(x, y, f.Name, contextual); d != nil {
				out = append(out, d)
			}
		case ft.Kind() == reflect.Slice && isPrimitiveKind(ft.Elem()):
			if d := setDiff(x, y, f.Name, contextual); d != nil && d.Type != DiffTypeNone {
				out = append(out, d)
			}
		case ft.Kind() == reflect.Slice:
			out = append(out, structSetDiffs(x, y, singular(f.Name), contextual)...)
		case ft.Kind() == reflect.Map && isPrimitiveKind(ft.Elem()):
			// Fields of the parent (flatPrimitives).
		case ft.Kind() == reflect.Map && structValue(reflect.Zero(ft.Elem())).IsValid() || ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Pointer && ft.Elem().Elem().Kind() == reflect.Struct:
			out = append(out, keyedDiffs(x, y, singular(f.Name), contextual)...)
		case ft.Kind() == reflect.Map || ft.Kind() == reflect.Interface:
			if d := flatDiff(x, y, f.Name, contextual); d != nil {
				out = append(out, d)
			}
		}
	}
	sortObjects(out)
	return out
}

// objectDiff diffs one nested object: its primitive fields and, in turn,
// its own objects. It returns nil when nothing changed.
func objectDiff(a, b reflect.Value, name string, contextual bool) *ObjectDiff {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return nil
	}
	d := &ObjectDiff{Name: name}
	d.Fields = fieldDiffs(flatPrimitives(a, nil), flatPrimitives(b, nil), contextual)
	d.Objects = objectDiffs(a, b, nil, contextual)
	d.Type = combinedType(d.Fields, d.Objects)
	if d.Type == DiffTypeNone {
		return nil
	}
	return d
}

// combinedType is an object's type from its members': Edited if any was
// edited or some were added and others deleted, else Added or Deleted,
// else None.
func combinedType(fields []*FieldDiff, objects []*ObjectDiff) DiffType {
	var added, deleted bool
	for _, f := range fields {
		switch f.Type {
		case DiffTypeEdited:
			return DiffTypeEdited
		case DiffTypeAdded:
			added = true
		case DiffTypeDeleted:
			deleted = true
		}
	}
	for _, o := range objects {
		switch o.Type {
		case DiffTypeEdited:
			return DiffTypeEdited
		case DiffTypeAdded:
			added = true
		case DiffTypeDeleted:
			deleted = true
		}
	}
	switch {
	case added && deleted:
		return DiffTypeEdited
	case added:
		return DiffTypeAdded
	case deleted:
		return DiffTypeDeleted
	}
	return DiffTypeNone
}

// setDiff diffs two lists of primitives as sets of strings.
func setDiff(a, b reflect.Value, name string, contextual bool) *ObjectDiff {
	members := func(v reflect.Value) map[string]bool {
		out := map[string]bool{}
		for i := range v.Len() {
			s, _ := primitive(v.Index(i))
			out[s] = true
		}
		return out
	}
	old, new := members(a), members(b)
	d := &ObjectDiff{Name: name}
	for k := range old {
		if !new[k] {
			d.Fields = append(d.Fields, &FieldDiff{Type: DiffTypeDeleted, Name: name, Old: k})
		} else if contextual {
			d.Fields = append(d.Fields, &FieldDiff{Type: DiffTypeNone, Name: name, Old: k, New: k})
		}
	}
	for k := range new {
		if !old[k] {
			d.Fields = append(d.Fields, &FieldDiff{Type: DiffTypeAdded, Name: name, New: k})
		}
	}
	if len(d.Fields) == 0 {
		return nil
	}
	sortFields(d.Fields)
	d.Type = combinedType(d.Fields, nil)
	return d
}

// structSetDiffs diffs two lists of structs as sets: members equal in
// every field match; the others are Deleted or Added objects.
func structSetDiffs(a, b reflect.Value, name string, contextual bool) []*ObjectDiff {
	keys := func(v reflect.Value) map[string]reflect.Value {
		out := make(map[string]reflect.Value, v.Len())
		for i := range v.Len() {
			out[flatKey(v.Index(i))] = v.Index(i)
		}
		return out
	}
	old, new := keys(a), keys(b)
	var out []*ObjectDiff
	for k, v := range old {
		if _, ok := new[k]; !ok {
			if d := memberDiff(v, reflect.Value{}, name, contextual); d != nil {
				out = append(out, d)
			}
		}
	}
	for k, v := range new {
		if _, ok := old[k]; !ok {
			if d := memberDiff(reflect.Value{}, v, name, contextual); d != nil {
				out = append(out, d)
			}
		}
	}
	sortObjects(out)
	return out
}

// keyedDiffs diffs two maps of structs by key.
func keyedDiffs(a, b reflect.Value, name string, contextual bool) []*ObjectDiff {
	var out []*ObjectDiff
	get := func(m reflect.Value, k reflect.Value) reflect.Value {
		if m.IsNil() {
			return reflect.Value{}
		}
		return m.MapIndex(k)
	}
	if !a.IsNil() {
		iter := a.MapRange()
		for iter.Next() {
			if d := memberDiff(iter.Value(), get(b, iter.Key()), name, contextual); d != nil {
				out = append(out, d)
			}
		}
	}
	if !b.IsNil() {
		iter := b.MapRange()
		for iter.Next() {
			if a.IsNil() || !a.MapIndex(iter.Key()).IsValid() {
				if d := memberDiff(reflect.Value{}, iter.Value(), name, contextual); d != nil {
					out = append(out, d)
				}
			}
		}
	}
	sortObjects(out)
	return out
}

// memberDiff diffs one member of a list or map (either side may be
// invalid: absent). A primitive member is a one-field object.
func memberDiff(a, b reflect.Value, name string, contextual bool) *ObjectDiff {
	el := a
	if !el.IsValid() {
		el = b
	}
	if !structValue(el).IsValid() && el.Kind() != reflect.Pointer {
		return flatDiff(a, b, name, contextual)
	}
	if !a.IsValid() {
		a = reflect.Zero(el.Type())
	}
	if !b.IsValid() {
		b = reflect.Zero(el.Type())
	}
	return objectDiff(a, b, name, contextual)
}

// flatDiff diffs two values of any shape flattened to their leaves (a
// task's Config: "args[0]", "auth[username]").
func flatDiff(a, b reflect.Value, name string, contextual bool) *ObjectDiff {
	old, new := map[string]string{}, map[string]string{}
	if a.IsValid() {
		flattenAll("", a, old)
	}
	if b.IsValid() {
		flattenAll("", b, new)
	}
	d := &ObjectDiff{Name: name, Fields: fieldDiffs(old, new, contextual)}
	d.Type = combinedType(d.Fields, nil)
	if d.Type == DiffTypeNone {
		return nil
	}
	return d
}

// flattenAll flattens v into out by path: struct fields as "a.b", map
// keys as "a[k]", list members as "a[0]".
func flattenAll(prefix string, v reflect.Value, out map[string]string) {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return
	}
	if s, ok := primitive(v); ok {
		out[prefix] = s
		return
	}
	switch v.Kind() {
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			p := k
			if prefix != "" {
				p = prefix + "[" + k + "]"
			}
			flattenAll(p, iter.Value(), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			flattenAll(prefix+"["+strconv.Itoa(i)+"]", v.Index(i), out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			p := t.Field(i).Name
			if prefix != "" {
				p = prefix + "." + p
			}
			flattenAll(p, v.Field(i), out)
		}
	}
}

// flatKey identifies a set member by its whole content.
func flatKey(v reflect.Value) string {
	m := map[string]string{}
	flattenAll("", v, m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
		b.WriteByte(';')
	}
	return b.String()
}

// fieldDiffs compares two flattened objects field by field, sorted by
// name; unchanged fields are listed only when contextual.
func fieldDiffs(old, new map[string]string, contextual bool) []*FieldDiff {
	var out []*FieldDiff
	for k, o := range old {
		n := new[k]
		if d := fieldDiff(o, n, k, contextual); d != nil {
			out = append(out, d)
		}
	}
	for k, n := range new {
		if _, ok := old[k]; !ok {
			if d := fieldDiff("", n, k, contextual); d != nil {
				out = append(out, d)
			}
		}
	}
	sortFields(out)
	return out
}

func fieldDiff(old, new, name string, contextual bool) *FieldDiff {
	switch {
	case old == new && !contextual:
		return nil
	case old == new:
		return &FieldDiff{Type: DiffTypeNone, Name: name, Old: old, New: new}
	case old == "":
		return &FieldDiff{Type: DiffTypeAdded, Name: name, New: new}
	case new == "":
		return &FieldDiff{Type: DiffTypeDeleted, Name: name, Old: old}
	}
	return &FieldDiff{Type: DiffTypeEdited, Name: name, Old: old, New: new}
}

func sortFields(fs []*FieldDiff) {
	slices.SortFunc(fs, func(a, b *FieldDiff) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Old, b.Old), strings.Compare(a.New, b.New))
	})
}

// diffTypeRank orders types as Nomad lists them: Edited, Added, Deleted,
// None.
func diffTypeRank(t DiffType) int {
	switch t {
	case DiffTypeEdited:
		return 0
	case DiffTypeAdded:
		return 1
	case DiffTypeDeleted:
		return 2
	}
	return 3
}

func sortObjects(os []*ObjectDiff) {
	slices.SortStableFunc(os, func(a, b *ObjectDiff) int {
		if c := cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(diffTypeRank(a.Type), diffTypeRank(b.Type))); c != 0 {
			return c
		}
		return strings.Compare(objectKey(a), objectKey(b))
	})
}

// objectKey orders objects of one name and type by their fields.
func objectKey(o *ObjectDiff) string {
	var b strings.Builder
	for _, f := range o.Fields {
		b.WriteString(f.Name + "=" + f.Old + ">" + f.New + ";")
	}
	return b.String()
}

func anyFieldChanged(fs []*FieldDiff) bool {
	return slices.ContainsFunc(fs, func(f *FieldDiff) bool { return f.Type != DiffTypeNone })
}

func anyObjectChanged(os []*ObjectDiff) bool {
	return slices.ContainsFunc(os, func(o *ObjectDiff) bool { return o.Type != DiffTypeNone })
}

// singular names one member of a list field as Nomad does
// ("Constraints" -> "Constraint", "Affinities" -> "Affinity").
func singular(field string) string {
	switch field {
	case "ReservedPorts":
		return "Static Port"
	case "DynamicPorts":
		return "Dynamic Port"
	}
	switch {
	case strings.HasSuffix(field, "ies"):
		return strings.TrimSuffix(field, "ies") + "y"
	case strings.HasSuffix(field, "s"):
		return strings.TrimSuffix(field, "s")
	}
	return field
}

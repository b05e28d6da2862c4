package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drover-project/drover/structs"
)

// Job diffs as Nomad's CLI prints them (job plan, job history -p): a
// marker per changed element ("+", "-", "+/-"), markers and field names
// padded so values line up, a group's update counts and a task's
// annotations in parentheses. An added or deleted task is one line unless
// verbose.

// diffMarker is the sign (and a space) printed before a changed element;
// "" for an unchanged one.
func diffMarker(t structs.DiffType) string {
	switch t {
	case structs.DiffTypeAdded:
		return "+ "
	case structs.DiffTypeDeleted:
		return "- "
	case structs.DiffTypeEdited:
		return "+/- "
	}
	return ""
}

// formatJobDiff renders d, ending in a newline.
func formatJobDiff(d *structs.JobDiff, verbose bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sJob: %q\n", diffMarker(d.Type), d.ID)
	nameLen, markLen := widths(d.Fields, d.Objects)
	for _, g := range d.TaskGroups {
		markLen = max(markLen, len(diffMarker(g.Type)))
	}
	if d.Type == structs.DiffTypeEdited || verbose {
		if s := fieldsAndObjects(d.Fields, d.Objects, 0, nameLen, markLen); s != "" {
			b.WriteString(s + "\n")
		}
	}
	for _, g := range d.TaskGroups {
		b.WriteString(formatGroupDiff(g, markLen-len(diffMarker(g.Type)), verbose) + "\n")
	}
	return b.String()
}

func formatGroupDiff(g *structs.TaskGroupDiff, pad int, verbose bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%sTask Group: %q", diffMarker(g.Type), strings.Repeat(" ", pad), g.Name)
	if len(g.Updates) > 0 {
		names := make([]string, 0, len(g.Updates))
		for name := range g.Updates {
			names = append(names, name)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = fmt.Sprintf("%d %s", g.Updates[name], name)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	nameLen, markLen := widths(g.Fields, g.Objects)
	for _, t := range g.Tasks {
		markLen = max(markLen, len(diffMarker(t.Type)))
	}
	indent := pad + 2
	if g.Type == structs.DiffTypeEdited || verbose {
		if s := fieldsAndObjects(g.Fields, g.Objects, indent, nameLen, markLen); s != "" {
			b.WriteString(s + "\n")
		}
	}
	for _, t := range g.Tasks {
		b.WriteString(formatTaskDiff(t, indent, markLen-len(diffMarker(t.Type)), verbose) + "\n")
	}
	return b.String()
}

func formatTaskDiff(t *structs.TaskDiff, indent, pad int, verbose bool) string {
	out := fmt.Sprintf("%s%s%sTask: %q", strings.Repeat(" ", indent), diffMarker(t.Type), strings.Repeat(" ", pad), t.Name)
	if len(t.Annotations) > 0 {
		out += " (" + strings.Join(t.Annotations, ", ") + ")"
	}
	if t.Type == structs.DiffTypeNone || (t.Type != structs.DiffTypeEdited && !verbose) {
		return out
	}
	nameLen, markLen := widths(t.Fields, t.Objects)
	return out + "\n" + fieldsAndObjects(t.Fields, t.Objects, indent+2, nameLen, markLen)
}

// fieldsAndObjects renders fields, then objects, one per line (no final
// newline), values aligned on nameLen and names on markLen.
func fieldsAndObjects(fields []*structs.FieldDiff, objects []*structs.ObjectDiff, indent, nameLen, markLen int) string {
	lines := make([]string, 0, len(fields)+len(objects))
	for _, f := range fields {
		lines = append(lines, formatFieldDiff(f, indent, markLen-len(diffMarker(f.Type)), nameLen-len(f.Name)))
	}
	for _, o := range objects {
		lines = append(lines, formatObjectDiff(o, indent, markLen-len(diffMarker(o.Type))))
	}
	return strings.Join(lines, "\n")
}

func formatObjectDiff(o *structs.ObjectDiff, indent, pad int) string {
	out := fmt.Sprintf("%s%s%s%s {\n", strings.Repeat(" ", indent), diffMarker(o.Type), strings.Repeat(" ", pad), o.Name)
	nameLen, markLen := widths(o.Fields, o.Objects)
	out += fieldsAndObjects(o.Fields, o.Objects, indent+pad+2, nameLen, markLen)
	return out + "\n" + strings.Repeat(" ", indent+len(diffMarker(o.Type))+pad) + "}"
}

func formatFieldDiff(f *structs.FieldDiff, indent, pad, valuePad int) string {
	out := fmt.Sprintf("%s%s%s%s: %s", strings.Repeat(" ", indent), diffMarker(f.Type), strings.Repeat(" ", pad), f.Name, strings.Repeat(" ", valuePad))
	switch f.Type {
	case structs.DiffTypeDeleted:
		out += fmt.Sprintf("%q", f.Old)
	case structs.DiffTypeEdited:
		out += fmt.Sprintf("%q => %q", f.Old, f.New)
	default:
		out += fmt.Sprintf("%q", f.New)
	}
	if len(f.Annotations) > 0 {
		out += " (" + strings.Join(f.Annotations, ", ") + ")"
	}
	return out
}

// widths returns the longest field name and the longest marker among
// fields and objects.
func widths(fields []*structs.FieldDiff, objects []*structs.ObjectDiff) (nameLen, markLen int) {
	for _, f := range fields {
		nameLen = max(nameLen, len(f.Name))
		markLen = max(markLen, len(diffMarker(f.Type)))
	}
	for _, o := range objects {
		markLen = max(markLen, len(diffMarker(o.Type)))
	}
	return nameLen, markLen
}

package jobspec

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// bodySpec lists what one kind of block may contain.
type bodySpec struct {
	what   string   // "job", "group", ... for messages
	attrs  []string // supported arguments
	blocks []string // supported block types
}

// nomadOnly lists, per block kind, the arguments and blocks Nomad accepts
// and Drover does not, so that the error says so instead of "unexpected".
var nomadOnly = map[string][]string{
	"file": {"variables"},
	"job": {"multiregion",
		"ui", "vault", "consul", "vault_token", "consul_token", "id", "group_selection"},
	"group": {"max_run_duration", "consul", "prevent_reschedule_on_lost", "vault"},
	"task": {"vault", "consul", "csi_plugin", "kind",
		"scaling", "secret", "action", "schedule"},
	"logs":         {"enabled"},
	"volume":       {"access_mode", "attachment_mode", "mount_options", "per_alloc", "sticky"},
	"volume_mount": {"selinux_label"},
	"identity":     {"aud", "change_mode", "change_signal", "filepath", "service_name", "ttl", "extra_claims"},
	"resources":    {"device", "numa", "secrets", "iops"},
	"network":      {"device", "cidr", "ip", "cni"},
	"port":         {"ignore_collision"},
	"service": {"canary_tags", "canary_meta", "enable_tag_override", "tagged_addresses", "connect",
		"identity", "weights", "cluster", "kind"},
	"check": {"expose", "advertise", "notes", "tls_server_name", "grpc_service", "grpc_use_tls",
		"failures_before_warning"},
	// A template that renders only once (once) and Vault's grace period
	// (vault_grace, unused since Nomad 0.12) are not built.
	"template":      {"vault_grace", "once"},
	"change_script": {"run_on_first_render"},
	// Nomad's parser reads these two and then drops them; Drover refuses
	// them rather than doing the same.
	"constraint": {"is_set", "is_not_set"},
	"variable":   {"validation", "sensitive", "nullable"},
}

// nomadOnlyInstead says, for a refused block or argument whose need
// Drover meets another way, what to use instead.
var nomadOnlyInstead = map[string]string{
	"consul": "register services with provider = \"nomad\" (Drover's own service catalog) and read them " +
		"in templates with nomadService",
	"vault": "keep secrets in Drover's variables and read them in templates with nomadVar; " +
		"the task's workload identity grants access",
	"csi_plugin": "mount a directory of the node with a client host_volume and a group volume block of type \"host\"",
	"device":     "place tasks on nodes with the hardware through constraints on node attributes or meta",
	"enabled":    "use disabled",
}

// content checks b against spec, reporting every argument and block it
// does not allow, and returns the allowed ones by name.
func (d *decoder) content(b *hclsyntax.Body, spec *bodySpec) (map[string]*hclsyntax.Attribute, map[string][]*hclsyntax.Block) {
	attrs := map[string]*hclsyntax.Attribute{}
	for _, a := range sortedAttrs(b) {
		if contains(spec.attrs, a.Name) {
			attrs[a.Name] = a
			continue
		}
		if contains(spec.blocks, a.Name) && !isMapBlock(a.Name) {
			d.add(diagAt(a.NameRange, "Unsupported argument",
				"%q is a block here, not an argument: write %s { ... }", a.Name, a.Name))
			continue
		}
		d.unsupported(a.NameRange, "argument", a.Name, spec)
	}
	blocks := map[string][]*hclsyntax.Block{}
	for _, blk := range b.Blocks {
		if contains(spec.blocks, blk.Type) {
			blocks[blk.Type] = append(blocks[blk.Type], blk)
			continue
		}
		if contains(spec.attrs, blk.Type) {
			d.add(diagAt(blk.TypeRange, "Unsupported block type",
				"%q is an argument here, not a block: write %s = ...", blk.Type, blk.Type))
			continue
		}
		d.unsupported(blk.TypeRange, "block", blk.Type, spec)
	}
	return attrs, blocks
}

// isMapBlock reports whether name may be written either as a block or as
// an argument holding a map.
func isMapBlock(name string) bool {
	return name == "meta" || name == "env" || name == "config" || name == "options" || name == "headers"
}

func (d *decoder) unsupported(rng hcl.Range, kind, name string, spec *bodySpec) {
	where := "in " + article(spec.what) + " " + spec.what + " block"
	if spec.what == "file" {
		where = "at the top level of a job file"
	}
	if contains(nomadOnly[spec.what], name) || kind == "block" && name == "dynamic" {
		summary := "Unsupported argument"
		if kind == "block" {
			summary = "Unsupported block type"
		}
		msg := fmt.Sprintf("Drover does not support the %q %s %s", name, kind, where)
		if instead := nomadOnlyInstead[name]; instead != "" {
			msg += "; instead, " + instead
		}
		d.add(diagAt(rng, summary, "%s", msg))
		return
	}
	candidates := spec.attrs
	summary := "Unsupported argument"
	if kind == "block" {
		candidates = spec.blocks
		summary = "Unsupported block type"
	}
	msg := fmt.Sprintf("%s %q is not expected %s", kindTitle(kind), name, where)
	if s := suggest(name, candidates); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: msg, Subject: rangePtr(rng)})
}

func kindTitle(kind string) string {
	if kind == "block" {
		return "A block of type"
	}
	return "An argument named"
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func rangePtr(r hcl.Range) *hcl.Range { return &r }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sortedAttrs returns b's attributes in source order.
func sortedAttrs(b *hclsyntax.Body) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SrcRange.Start.Byte < out[j].SrcRange.Start.Byte })
	return out
}

// labels checks that blk has exactly want labels; name and example
// describe the label for the message ("ID", "example").
func (d *decoder) labels(blk *hclsyntax.Block, want int, name, example string) bool {
	switch {
	case len(blk.Labels) < want:
		d.add(diagAt(blk.OpenBraceRange, "Missing "+blk.Type+" "+name,
			"a %s block needs its %s as a label: %s %q { ... }", blk.Type, name, blk.Type, example))
		return false
	case len(blk.Labels) > want:
		extra := blk.LabelRanges[want]
		if want == 0 {
			d.add(diagAt(extra, "Extraneous label for "+blk.Type, "a %s block takes no labels", blk.Type))
		} else {
			d.add(diagAt(extra, "Extraneous label for "+blk.Type, "a %s block takes one label, its %s", blk.Type, name))
		}
		return false
	}
	return true
}

// single returns the only block of its type, reporting any duplicates.
func (d *decoder) single(blocks []*hclsyntax.Block, where string) *hclsyntax.Block {
	if len(blocks) == 0 {
		return nil
	}
	first := blocks[0]
	for _, dup := range blocks[1:] {
		d.add(diagAt(dup.TypeRange, "Duplicate "+dup.Type+" block",
			"only one %s block is allowed in %s %s; the first is at line %d",
			dup.Type, article(where), where, first.TypeRange.Start.Line))
	}
	if !d.labels(first, 0, "", "") {
		return nil
	}
	return first
}

// eval evaluates a's expression; ok is false on error or when the value
// is null (which means "not set").
func (d *decoder) eval(a *hclsyntax.Attribute) (cty.Value, bool) {
	v, diags := d.ev.value(a.Expr)
	if diags.HasErrors() && !d.checkRefs(a.Expr) {
		return cty.NilVal, false // reported more clearly than diags would
	}
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || v.IsNull() {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		d.add(diagAt(a.Expr.Range(), "Unknown value for "+a.Name, "the value must be known when the file is parsed"))
		return cty.NilVal, false
	}
	return v, true
}

// checkRefs reports references to undeclared variables and locals, with
// a clearer message than the evaluator's; it is called only once an
// evaluation failed, since try(var.x, ...) may name one on purpose.
func (d *decoder) checkRefs(expr hclsyntax.Expression) bool {
	ok := true
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		if root != "var" && root != "local" || len(tr) < 2 {
			continue
		}
		step, isAttr := tr[1].(hcl.TraverseAttr)
		scope := d.ev.ctx.Variables[root]
		if !isAttr || scope == cty.NilVal || scope.Type().HasAttribute(step.Name) {
			continue
		}
		ok = false
		if root == "var" {
			d.add(diagAt(tr.SourceRange(), "Undeclared variable",
				"var.%s is not declared; add a variable %q block", step.Name, step.Name))
		} else {
			d.add(diagAt(tr.SourceRange(), "Undefined local value",
				"local.%s is not defined in any locals block", step.Name))
		}
	}
	return ok
}

func (d *decoder) str(attrs map[string]*hclsyntax.Attribute, name string, dst *string) {
	if a := attrs[name]; a != nil {
		if v, ok := d.eval(a); ok {
			s, diag := toString(v, a.Expr.Range(), name)
			d.addOr(diag, func() { *dst = s })
		}
	}
}

func (d *decoder) integer(attrs map[string]*hclsyntax.Attribute, name string, dst *int) bool {
	if a := attrs[name]; a != nil {
		if v, ok := d.eval(a); ok {
			i, diag := toInt(v, a.Expr.Range(), name)
			d.addOr(diag, func() { *dst = i })
			return diag == nil
		}
	}
	return false
}

func (d *decoder) boolean(attrs map[string]*hclsyntax.Attribute, name string, dst *bool) bool {
	if a := attrs[name]; a != nil {
		if v, ok := d.eval(a); ok {
			b, diag := toBool(v, a.Expr.Range(), name)
			d.addOr(diag, func() { *dst = b })
			return diag == nil
		}
	}
	return false
}

func (d *decoder) duration(attrs map[string]*hclsyntax.Attribute, name string, dst *time.Duration) {
	if a := attrs[name]; a != nil {
		if v, ok := d.eval(a); ok {
			dur, diag := toDuration(v, a.Expr.Range(), name)
			d.addOr(diag, func() { *dst = dur })
		}
	}
}

func (d *decoder) strList(attrs map[string]*hclsyntax.Attribute, name string, dst *[]string) {
	if a := attrs[name]; a != nil {
		if v, ok := d.eval(a); ok {
			l, diag := toStringList(v, a.Expr.Range(), name)
			d.addOr(diag, func() { *dst = l })
		}
	}
}

// strMap reads a map of strings written either as an argument
// (meta = { ... }) or as a block (meta { ... }), but not both.
func (d *decoder) strMap(attrs map[string]*hclsyntax.Attribute, blocks map[string][]*hclsyntax.Block, name, where string) map[string]string {
	a := attrs[name]
	blk := d.single(blocks[name], where)
	switch {
	case a != nil && blk != nil:
		d.add(diagAt(blk.TypeRange, "Duplicate "+name,
			"%s is already set as an argument at line %d; use either the argument or the block", name, a.NameRange.Start.Line))
		return nil
	case a != nil:
		v, ok := d.eval(a)
		if !ok {
			return nil
		}
		m, diag := toStringMap(v, a.Expr.Range(), name)
		d.addOr(diag, nil)
		return m
	case blk != nil:
		for _, inner := range blk.Body.Blocks {
			d.add(diagAt(inner.TypeRange, "Unsupported block type",
				"%s holds only name = value pairs; blocks are not allowed in it", name))
		}
		out := map[string]string{}
		for _, ia := range sortedAttrs(blk.Body) {
			if v, ok := d.eval(ia); ok {
				s, diag := toString(v, ia.Expr.Range(), name+"."+ia.Name)
				d.addOr(diag, func() { out[ia.Name] = s })
			}
		}
		return out
	}
	return nil
}

// freeform reads a task config written as a block or an argument: nested
// blocks become lists of maps under their type, as in Nomad.
func (d *decoder) freeform(attrs map[string]*hclsyntax.Attribute, blocks map[string][]*hclsyntax.Block, name, where string) map[string]any {
	a := attrs[name]
	blk := d.single(blocks[name], where)
	switch {
	case a != nil && blk != nil:
		d.add(diagAt(blk.TypeRange, "Duplicate "+name,
			"%s is already set as an argument at line %d; use either the argument or the block", name, a.NameRange.Start.Line))
	case a != nil:
		v, ok := d.eval(a)
		if !ok {
			return nil
		}
		if !v.Type().IsObjectType() && !v.Type().IsMapType() {
			d.add(diagAt(a.Expr.Range(), "Invalid value for "+name, "an object is required; got %s", typeName(v)))
			return nil
		}
		g, err := toGo(v)
		if err != nil {
			d.add(diagAt(a.Expr.Range(), "Invalid value for "+name, "%v", err))
			return nil
		}
		return g.(map[string]any)
	case blk != nil:
		return d.freeformBody(blk.Body)
	}
	return nil
}

func (d *decoder) freeformBody(b *hclsyntax.Body) map[string]any {
	out := map[string]any{}
	for _, a := range sortedAttrs(b) {
		v, ok := d.eval(a)
		if !ok {
			continue
		}
		g, err := toGo(v)
		if err != nil {
			d.add(diagAt(a.Expr.Range(), "Invalid value for "+a.Name, "%v", err))
			continue
		}
		out[a.Name] = g
	}
	for _, blk := range b.Blocks {
		if blk.Type == "dynamic" {
			d.add(diagAt(blk.TypeRange, "Unsupported block type",
				`Drover does not support the "dynamic" block in a task config`))
			continue
		}
		if len(blk.Labels) > 0 {
			d.add(diagAt(blk.LabelRanges[0], "Unsupported block label",
				"Drover does not support labeled blocks in a task config; write %s { ... }", blk.Type))
			continue
		}
		if _, isAttr := b.Attributes[blk.Type]; isAttr {
			d.add(diagAt(blk.TypeRange, "Duplicate "+blk.Type,
				"%s is already set as an argument; use either the argument or blocks", blk.Type))
			continue
		}
		list, _ := out[blk.Type].([]any)
		out[blk.Type] = append(list, d.freeformBody(blk.Body))
	}
	return out
}

// add records a diagnostic (nil is ignored).
func (d *decoder) add(diag *hcl.Diagnostic) {
	if diag != nil {
		d.diags = append(d.diags, diag)
	}
}

// addOr records diag, or runs ok when there is none.
func (d *decoder) addOr(diag *hcl.Diagnostic, ok func()) {
	if diag != nil {
		d.diags = append(d.diags, diag)
		return
	}
	if ok != nil {
		ok()
	}
}

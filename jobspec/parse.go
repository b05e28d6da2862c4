package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/drover-project/drover/internal/hcllimit"
	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Options are the inputs of a parse besides the file itself.
type Options struct {
	// Vars are -var overrides, name -> value as typed on the command
	// line. A value for a variable of a complex type (list, map, object)
	// is read as an HCL expression; otherwise it is a string converted to
	// the variable's type.
	Vars map[string]string
	// VarFiles are -var-file paths: HCL files of name = value lines. -var
	// wins over a var file, and a later file over an earlier one.
	VarFiles []string
}

// ParseFile reads and parses the job file at path.
func ParseFile(path string, opts *Options) (*structs.Job, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Diags: []Diag{{File: path, Summary: "Failed to read job file", Detail: errText(err)}}}
	}
	return Parse(path, src, opts)
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse parses one job file; filename is used in messages. A file whose
// first non-space character is '{' is read as JSON (Nomad's API shape),
// anything else as HCL. Errors are *Error.
func Parse(filename string, src []byte, opts *Options) (*structs.Job, error) {
	if opts == nil {
		opts = &Options{}
	}
	if trimmed := bytes.TrimLeft(src, " \t\r\n\ufeff"); len(trimmed) > 0 && trimmed[0] == '{' {
		if len(opts.Vars) > 0 || len(opts.VarFiles) > 0 {
			return nil, &Error{Diags: []Diag{{File: filename, Summary: "Variables not supported",
				Detail: "-var and -var-file apply to HCL job files only; this file is JSON"}}}
		}
		return parseJSON(filename, src)
	}
	// hcl's parser is recursive: bound nesting before it sees the text.
	if diags := hcllimit.HCL(filename, src); diags.HasErrors() {
		return nil, errorFromHCL(diags)
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, errorFromHCL(diags)
	}
	if diags := unsupportedCalls(file.Body.(*hclsyntax.Body)); diags.HasErrors() {
		return nil, errorFromHCL(diags)
	}
	d := &decoder{ev: &evaluator{src: src, ctx: &hcl.EvalContext{Functions: functions()}}}
	job := d.file(file.Body.(*hclsyntax.Body), opts)
	if err := errorFromHCL(d.diags); err != nil {
		return nil, err
	}
	return job, nil
}

var (
	fileSpec     = &bodySpec{what: "file", blocks: []string{"variable", "locals", "job"}}
	variableSpec = &bodySpec{what: "variable", attrs: []string{"type", "default", "description"}}
)

// file decodes the top level: variables, then locals, then the job.
func (d *decoder) file(body *hclsyntax.Body, opts *Options) *structs.Job {
	_, blocks := d.content(body, fileSpec)
	vars := d.variables(blocks["variable"], opts)
	d.ev.ctx.Variables = map[string]cty.Value{"var": cty.ObjectVal(vars)}
	d.ev.ctx.Variables["local"] = cty.ObjectVal(d.locals(blocks["locals"]))
	if d.diags.HasErrors() {
		// Later errors would only repeat these (unknown var.x, ...).
		return nil
	}
	jobs := blocks["job"]
	switch {
	case len(jobs) == 0:
		d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing job block",
			Detail:  `a job file needs one job block: job "name" { ... }`,
			Subject: &hcl.Range{Filename: body.SrcRange.Filename, Start: hcl.InitialPos, End: hcl.InitialPos}})
		return nil
	case len(jobs) > 1:
		for _, dup := range jobs[1:] {
			d.add(diagAt(dup.TypeRange, "Duplicate job block",
				"a job file holds one job; the first is at line %d", jobs[0].TypeRange.Start.Line))
		}
	}
	return d.job(jobs[0])
}

// variable is one declared input variable.
type variable struct {
	name   string
	typ    cty.Type // cty.DynamicPseudoType when no type is given
	value  cty.Value
	set    bool
	declAt hcl.Range
}

// variables decodes the variable blocks and applies var files and -var.
func (d *decoder) variables(blocks []*hclsyntax.Block, opts *Options) map[string]cty.Value {
	declared := map[string]*variable{}
	var order []string
	for _, blk := range blocks {
		if !d.labels(blk, 1, "name", "image") {
			continue
		}
		name := blk.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			d.add(diagAt(blk.LabelRanges[0], "Invalid variable name",
				"%q: a name must start with a letter and contain only letters, digits, '_' and '-'", name))
			continue
		}
		if prev, ok := declared[name]; ok {
			d.add(diagAt(blk.LabelRanges[0], "Duplicate variable",
				"variable %q is already declared at line %d", name, prev.declAt.Start.Line))
			continue
		}
		v := &variable{name: name, typ: cty.DynamicPseudoType, declAt: blk.TypeRange}
		attrs, _ := d.content(blk.Body, variableSpec)
		if a := attrs["type"]; a != nil {
			t, diags := typeexpr.TypeConstraint(a.Expr)
			d.diags = append(d.diags, diags...)
			if !diags.HasErrors() {
				v.typ = t
			}
		}
		if a := attrs["default"]; a != nil {
			// Defaults see functions but no variables.
			val, diags := a.Expr.Value(&hcl.EvalContext{Functions: d.ev.ctx.Functions})
			d.diags = append(d.diags, diags...)
			if !diags.HasErrors() {
				if cv, err := convert.Convert(val, v.typ); err != nil {
					d.add(diagAt(a.Expr.Range(), "Invalid default value for variable",
						"variable %q is of type %s: %s", name, typeexpr.TypeString(v.typ), err))
					v.value, v.set = cty.DynamicVal, true // reported; not "unset" as well
				} else {
					v.value, v.set = cv, true
				}
			}
		}
		declared[name] = v
		order = append(order, name)
	}

	for _, path := range opts.VarFiles {
		d.varFile(path, declared)
	}
	names := make([]string, 0, len(opts.Vars))
	for name := range opts.Vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v, ok := declared[name]
		if !ok {
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
				Detail: fmt.Sprintf("-var %s=...: the job file declares no variable %q", name, name)})
			continue
		}
		val, err := cliValue(opts.Vars[name], v.typ)
		if err != nil {
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail: fmt.Sprintf("-var %s=%s: variable %q is of type %s: %s", name, opts.Vars[name], name, typeexpr.TypeString(v.typ), err)})
			continue
		}
		v.value, v.set = val, true
	}

	out := make(map[string]cty.Value, len(declared))
	for _, name := range order {
		v := declared[name]
		if !v.set {
			d.add(diagAt(v.declAt, "Unset variable",
				"variable %q has no default; set it with -var %s=... or in a -var-file", name, name))
			continue
		}
		out[name] = v.value
	}
	return out
}

// cliValue converts a -var value to typ: complex types are read as HCL
// expressions, everything else as a string.
func cliValue(raw string, typ cty.Type) (cty.Value, error) {
	if typ.IsPrimitiveType() || typ == cty.DynamicPseudoType {
		return convert.Convert(cty.StringVal(raw), typ)
	}
	if diags := hcllimit.Expression("-var", []byte(raw)); diags.HasErrors() {
		return cty.NilVal, errors.New(diags[0].Detail)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "-var", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, errors.New(diags[0].Detail)
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, errors.New(diags[0].Detail)
	}
	return convert.Convert(val, typ)
}

// varFile applies the name = value lines of one var file.
func (d *decoder) varFile(path string, declared map[string]*variable) {
	src, err := os.ReadFile(path)
	if err != nil {
		d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Failed to read variable file",
			Detail: fmt.Sprintf("%s: %s", path, errText(err))})
		return
	}
	if diags := hcllimit.HCL(path, src); diags.HasErrors() {
		d.diags = append(d.diags, diags...)
		return
	}
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return
	}
	body := file.Body.(*hclsyntax.Body)
	for _, blk := range body.Blocks {
		d.add(diagAt(blk.TypeRange, "Unexpected block", "a variable file holds only name = value lines"))
	}
	for _, a := range sortedAttrs(body) {
		v, ok := declared[a.Name]
		if !ok {
			d.add(diagAt(a.NameRange, "Undeclared variable", "the job file declares no variable %q", a.Name))
			continue
		}
		val, diags := a.Expr.Value(&hcl.EvalContext{Functions: d.ev.ctx.Functions})
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		cv, err := convert.Convert(val, v.typ)
		if err != nil {
			d.add(diagAt(a.Expr.Range(), "Invalid value for variable",
				"variable %q is of type %s: %s", a.Name, typeexpr.TypeString(v.typ), err))
			continue
		}
		v.value, v.set = cv, true
	}
}

// locals evaluates the locals blocks in dependency order.
func (d *decoder) locals(blocks []*hclsyntax.Block) map[string]cty.Value {
	pending := map[string]*hclsyntax.Attribute{}
	for _, blk := range blocks {
		if !d.labels(blk, 0, "", "") {
			continue
		}
		for _, inner := range blk.Body.Blocks {
			d.add(diagAt(inner.TypeRange, "Unexpected block", "locals holds only name = value lines"))
		}
		for _, a := range sortedAttrs(blk.Body) {
			if prev, ok := pending[a.Name]; ok {
				d.add(diagAt(a.NameRange, "Duplicate local value",
					"local.%s is already defined at line %d", a.Name, prev.NameRange.Start.Line))
				continue
			}
			pending[a.Name] = a
		}
	}
	done := map[string]cty.Value{}
	for len(pending) > 0 {
		progress := false
		for _, name := range sortedKeys(pending) {
			a := pending[name]
			if waitsOn(a, pending) != "" {
				continue
			}
			d.ev.ctx.Variables["local"] = cty.ObjectVal(done)
			v, diags := d.ev.value(a.Expr)
			d.diags = append(d.diags, diags...)
			if !diags.HasErrors() {
				done[name] = v
			}
			delete(pending, name)
			progress = true
		}
		if !progress {
			for _, name := range sortedKeys(pending) {
				a := pending[name]
				d.add(diagAt(a.NameRange, "Local value cycle",
					"local.%s depends on local.%s, which depends back on it", name, waitsOn(a, pending)))
			}
			break
		}
	}
	return done
}

// waitsOn returns the first local that a refers to and that is still
// pending, or "".
func waitsOn(a *hclsyntax.Attribute, pending map[string]*hclsyntax.Attribute) string {
	for _, tr := range a.Expr.Variables() {
		if tr.RootName() != "local" || len(tr) < 2 {
			continue
		}
		if step, ok := tr[1].(hcl.TraverseAttr); ok {
			if _, isPending := pending[step.Name]; isPending && step.Name != a.Name {
				return step.Name
			}
			if step.Name == a.Name {
				return a.Name
			}
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

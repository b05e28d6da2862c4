package jobspec

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions are the functions a job file may call: cty's standard library
// under Terraform's (and Nomad's) names, plus try and can. Built once;
// the map and the functions are read only.
var functions = sync.OnceValue(func() map[string]function.Function {
	fns := map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"log": stdlib.LogFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "signum": stdlib.SignumFunc,

		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc,
		"replace": stdlib.ReplaceFunc, "split": stdlib.SplitFunc, "strlen": stdlib.StrlenFunc,
		"strrev": stdlib.ReverseFunc, "reverse": stdlib.ReverseFunc, // a string, as in Nomad
		"substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc,
		"trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc,

		"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc,
		"coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc,
		"concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc, "distinct": stdlib.DistinctFunc,
		"element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc, "index": stdlib.IndexFunc,
		"keys": stdlib.KeysFunc, "length": stdlib.LengthFunc, "lookup": stdlib.LookupFunc,
		"merge": stdlib.MergeFunc, "range": stdlib.RangeFunc,
		"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc,
		"setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc,
		"zipmap": stdlib.ZipmapFunc,

		"csvdecode": stdlib.CSVDecodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,

		"tobool": stdlib.MakeToFunc(cty.Bool), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tostring": stdlib.MakeToFunc(cty.String), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)), "toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),

		"try": tryfunc.TryFunc, "can": tryfunc.CanFunc, "convert": typeexpr.ConvertFunc,

		"base64encode": base64EncodeFunc, "base64decode": base64DecodeFunc, "urlencode": urlEncodeFunc,
		"md5": md5Func, "sha1": sha1Func, "sha256": sha256Func, "sha512": sha512Func,
	}
	for _, name := range nomadOnlyFunctions {
		fns[name] = unsupportedFunc(name)
	}
	return fns
})

// parseTimeRoots are the only variable roots the parser resolves: var.*
// (variable blocks) and local.* (locals blocks). A reference with any other
// root, such as ${attr.kernel.name}, ${node.class}, ${meta.rack},
// ${NOMAD_META_owner} or ${NOMAD_PORT_http}, is resolved when the job runs,
// by the scheduler (constraints) or the client (task env and config), and
// is kept as written.
var parseTimeRoots = map[string]bool{"var": true, "local": true}

// evaluator evaluates expressions of one file. Template interpolations
// that refer only to runtime roots ("${attr.kernel.name}") are kept
// verbatim; everything else is evaluated with ctx.
type evaluator struct {
	src []byte
	ctx *hcl.EvalContext
}

// value evaluates expr.
func (ev *evaluator) value(expr hclsyntax.Expression) (cty.Value, hcl.Diagnostics) {
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		if e.IsStringLiteral() {
			return e.Value(ev.ctx)
		}
		var b strings.Builder
		var diags hcl.Diagnostics
		for _, part := range e.Parts {
			s, ds := ev.templatePart(part)
			diags = append(diags, ds...)
			b.WriteString(s)
		}
		if diags.HasErrors() {
			return cty.DynamicVal, diags
		}
		return cty.StringVal(b.String()), diags
	case *hclsyntax.TemplateWrapExpr:
		if ok, diags := ev.isRuntime(e.Wrapped); ok || diags.HasErrors() {
			return cty.StringVal(ev.runtimeText(e.Wrapped)), diags
		}
		return ev.value(e.Wrapped)
	case *hclsyntax.TupleConsExpr:
		vals := make([]cty.Value, 0, len(e.Exprs))
		var diags hcl.Diagnostics
		for _, x := range e.Exprs {
			v, ds := ev.value(x)
			diags = append(diags, ds...)
			vals = append(vals, v)
		}
		if diags.HasErrors() {
			return cty.DynamicVal, diags
		}
		return cty.TupleVal(vals), diags
	case *hclsyntax.ObjectConsExpr:
		attrs := make(map[string]cty.Value, len(e.Items))
		var diags hcl.Diagnostics
		for _, item := range e.Items {
			k, ds := item.KeyExpr.Value(ev.ctx)
			diags = append(diags, ds...)
			if ds.HasErrors() {
				continue
			}
			k, err := convert.Convert(k, cty.String)
			if err != nil || k.IsNull() {
				diags = append(diags, diagAt(item.KeyExpr.Range(), "Invalid object key", "object keys must be strings"))
				continue
			}
			v, ds := ev.value(item.ValueExpr)
			diags = append(diags, ds...)
			attrs[k.AsString()] = v
		}
		if diags.HasErrors() {
			return cty.DynamicVal, diags
		}
		return cty.ObjectVal(attrs), diags
	}
	return expr.Value(ev.ctx)
}

// templatePart renders one part of a string template.
func (ev *evaluator) templatePart(part hclsyntax.Expression) (string, hcl.Diagnostics) {
	if ok, diags := ev.isRuntime(part); ok || diags.HasErrors() {
		return ev.runtimeText(part), diags
	}
	v, diags := ev.value(part)
	if diags.HasErrors() {
		return "", diags
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.IsNull() || !sv.IsKnown() {
		return "", hcl.Diagnostics{diagAt(part.Range(), "Invalid template interpolation value",
			"cannot include a %s in a string", typeName(v))}
	}
	return sv.AsString(), nil
}

// isRuntime reports whether expr is a runtime interpolation: it refers to
// variables and none of them has a parse-time root. Mixing the two kinds
// in one expression is an error.
func (ev *evaluator) isRuntime(expr hclsyntax.Expression) (bool, hcl.Diagnostics) {
	vars := expr.Variables()
	if len(vars) == 0 {
		return false, nil
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].SourceRange().Start.Byte < vars[j].SourceRange().Start.Byte })
	var runtime, parseTime string
	for _, v := range vars {
		root := v.RootName()
		switch {
		case parseTimeRoots[root] && parseTime == "":
			parseTime = root
		case !parseTimeRoots[root] && runtime == "":
			runtime = root
		}
	}
	switch {
	case runtime == "":
		return false, nil
	case parseTime != "":
		return false, hcl.Diagnostics{diagAt(expr.Range(), "Mixed interpolation",
			"%q is resolved when the job runs and %q when the file is parsed; use separate ${...} for each",
			runtime, parseTime)}
	}
	return true, nil
}

// runtimeText returns "${...}" around expr's source text.
func (ev *evaluator) runtimeText(expr hclsyntax.Expression) string {
	r := expr.Range()
	if r.Start.Byte < 0 || r.End.Byte > len(ev.src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return "${" + string(ev.src[r.Start.Byte:r.End.Byte]) + "}"
}

// typeName describes v's type for messages.
func typeName(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}

// toString converts v to a string.
func toString(v cty.Value, rng hcl.Range, name string) (string, *hcl.Diagnostic) {
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.IsNull() || !sv.IsKnown() {
		return "", diagAt(rng, "Invalid value for "+name, "a string is required; got %s", typeName(v))
	}
	return sv.AsString(), nil
}

// toInt converts v to a whole number that fits an int.
func toInt(v cty.Value, rng hcl.Range, name string) (int, *hcl.Diagnostic) {
	nv, err := convert.Convert(v, cty.Number)
	if err != nil || nv.IsNull() || !nv.IsKnown() {
		return 0, diagAt(rng, "Invalid value for "+name, "a number is required; got %s", typeName(v))
	}
	bf := nv.AsBigFloat()
	i, acc := bf.Int64()
	if acc != big.Exact || !bf.IsInt() || i < -1<<31 || i > 1<<31-1 {
		return 0, diagAt(rng, "Invalid value for "+name, "a whole number is required; got %s", bf.Text('g', -1))
	}
	return int(i), nil
}

// toBool converts v to a bool.
func toBool(v cty.Value, rng hcl.Range, name string) (bool, *hcl.Diagnostic) {
	bv, err := convert.Convert(v, cty.Bool)
	if err != nil || bv.IsNull() || !bv.IsKnown() {
		return false, diagAt(rng, "Invalid value for "+name, "true or false is required; got %s", typeName(v))
	}
	return bv.True(), nil
}

// toDuration converts a string such as "30s" or "1h30m".
func toDuration(v cty.Value, rng hcl.Range, name string) (time.Duration, *hcl.Diagnostic) {
	if v.Type() == cty.Number && !v.IsNull() {
		// Nomad reads a bare number as nanoseconds, a frequent mistake.
		return 0, diagAt(rng, "Invalid value for "+name,
			`Drover does not support a duration written as a number (Nomad reads it as nanoseconds); write a string such as "30s"`)
	}
	if v.Type() != cty.String || v.IsNull() {
		return 0, diagAt(rng, "Invalid value for "+name, `a duration string such as "30s" is required; got %s`, typeName(v))
	}
	d, err := time.ParseDuration(v.AsString())
	if err != nil {
		return 0, diagAt(rng, "Invalid value for "+name, `%q is not a duration; use a number with a unit, such as "30s" or "5m"`, v.AsString())
	}
	return d, nil
}

// toStringList converts a list, tuple or set of strings.
func toStringList(v cty.Value, rng hcl.Range, name string) ([]string, *hcl.Diagnostic) {
	t := v.Type()
	if v.IsNull() || !(t.IsListType() || t.IsTupleType() || t.IsSetType()) {
		return nil, diagAt(rng, "Invalid value for "+name, "a list of strings is required; got %s", typeName(v))
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		s, d := toString(ev, rng, name)
		if d != nil {
			return nil, diagAt(rng, "Invalid value for "+name, "every element must be a string; got %s", typeName(ev))
		}
		out = append(out, s)
	}
	return out, nil
}

// toStringMap converts an object or map whose values are strings (numbers
// and bools are written as strings).
func toStringMap(v cty.Value, rng hcl.Range, name string) (map[string]string, *hcl.Diagnostic) {
	t := v.Type()
	if v.IsNull() || !(t.IsObjectType() || t.IsMapType()) {
		return nil, diagAt(rng, "Invalid value for "+name, "a map of strings is required; got %s", typeName(v))
	}
	out := make(map[string]string, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		s, d := toString(ev, rng, name)
		if d != nil {
			return nil, diagAt(rng, "Invalid value for "+name, "the value of %q must be a string; got %s", k.AsString(), typeName(ev))
		}
		out[k.AsString()] = s
	}
	return out, nil
}

// toGo converts a value for a free-form task config: strings, whole
// numbers as int, other numbers as float64, bools, []any and
// map[string]any.
func toGo(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsKnown() {
		return nil, fmt.Errorf("value is not known")
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact && i >= -1<<53 && i <= 1<<53 {
				return int(i), nil
			}
		}
		f, _ := bf.Float64()
		return f, nil
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			g, err := toGo(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			g, err := toGo(ev)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("values of type %s are not supported here", t.FriendlyName())
}

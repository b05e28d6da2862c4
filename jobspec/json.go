package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
)

// parseJSON reads a job in the JSON shape of Nomad's HTTP API: either
// {"Job": {...}} or the bare job object. Durations are integers of
// nanoseconds, as in the API. A field Drover does not model is an error
// unless its value is empty (null, false, 0, "", [] or {}), so that jobs
// written by Drover's own `job inspect` read back, and nothing a file asks
// for is silently dropped.
func parseJSON(filename string, src []byte) (*structs.Job, error) {
	var generic any
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, jsonSyntaxError(filename, src, err)
	}
	if dec.More() {
		off := dec.InputOffset()
		line, col := lineCol(src, off)
		return nil, &Error{Diags: []Diag{{File: filename, Line: line, Column: col,
			Summary: "Invalid JSON", Detail: "the file must hold exactly one JSON object"}}}
	}
	top, ok := generic.(map[string]any)
	if !ok {
		return nil, &Error{Diags: []Diag{{File: filename, Summary: "Invalid JSON job", Detail: "the file must hold a JSON object"}}}
	}
	jobVal, prefix := any(top), "Job"
	var diags []Diag
	if key, inner, wrapped := wrappedJob(top); wrapped {
		jobVal = inner
		for k, v := range top {
			if k != key && !emptyJSON(v) {
				diags = append(diags, Diag{File: filename, Summary: "Unsupported field",
					Detail: fmt.Sprintf("%q: only \"Job\" is expected beside the job", k)})
			}
		}
	}
	if _, ok := jobVal.(map[string]any); !ok {
		return nil, &Error{Diags: []Diag{{File: filename, Summary: "Invalid JSON job", Detail: "\"Job\" must be an object"}}}
	}
	if len(diags) > 0 {
		return nil, &Error{Diags: diags}
	}
	job, err := DecodeAPIJob(prefix, jobVal.(map[string]any))
	if err != nil {
		var ve *structs.ValidationError
		if !errors.As(err, &ve) {
			return nil, &Error{Diags: []Diag{{File: filename, Summary: "Invalid JSON job", Detail: err.Error()}}}
		}
		for _, fe := range ve.Errors {
			summary := "Invalid value"
			if strings.HasPrefix(fe.Message, unsupportedPrefix) {
				summary = "Unsupported field"
			}
			diags = append(diags, Diag{File: filename, Summary: summary, Detail: fe.String()})
		}
		sort.SliceStable(diags, func(i, j int) bool { return diags[i].Detail < diags[j].Detail })
		return nil, &Error{Diags: diags}
	}
	return job, nil
}

// wrappedJob reports whether top is {"Job": {...}} (the key matched
// without regard to case, as encoding/json does).
func wrappedJob(top map[string]any) (string, any, bool) {
	for _, k := range sortedKeys(top) {
		if v := top[k]; strings.EqualFold(k, "Job") {
			if _, isObj := v.(map[string]any); isObj {
				return k, v, true
			}
		}
	}
	return "", nil, false
}

func jsonSyntaxError(filename string, src []byte, err error) error {
	var se *json.SyntaxError
	d := Diag{File: filename, Summary: "Invalid JSON", Detail: err.Error()}
	if errors.As(err, &se) {
		d.Line, d.Column = lineCol(src, max(se.Offset-1, 0)) // Offset is just past the bad byte
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		d.Detail = "unexpected end of file"
	}
	return &Error{Diags: []Diag{d}}
}

// lineCol converts a byte offset to a 1-based line and column.
func lineCol(src []byte, off int64) (int, int) {
	if off > int64(len(src)) {
		off = int64(len(src))
	}
	before := src[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

var durationType = reflect.TypeFor[time.Duration]()

// checkJSONFields reports every key in v (decoded JSON) that t does not
// have and whose value is not empty, naming its path and, where known, the
// Nomad feature it asks for. Free-form maps (task config) are not looked
// into.
func checkJSONFields(path string, v any, t reflect.Type, errs *[]structs.FieldError) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok || t == reflect.TypeFor[time.Time]() {
			return // a type mismatch is reported by the decoder
		}
		seen := map[string]string{} // field name -> the key that set it
		for _, k := range sortedKeys(obj) {
			f, found := jsonField(t, k)
			if !found {
				if !emptyJSON(obj[k]) {
					*errs = append(*errs, structs.FieldError{Field: joinPath(path, k), Message: unsupportedMessage(t, k)})
				}
				continue
			}
			// Keys match fields without regard to case, so two keys
			// may name one field; which would win is not obvious.
			if prev, dup := seen[f.Name]; dup {
				*errs = append(*errs, structs.FieldError{Field: joinPath(path, k),
					Message: fmt.Sprintf("duplicate of %q (field names match without regard to case)", prev)})
				continue
			}
			seen[f.Name] = k
			checkJSONFields(joinPath(path, f.Name), obj[k], f.Type, errs)
		}
	case reflect.Slice:
		if arr, ok := v.([]any); ok {
			for i, e := range arr {
				checkJSONFields(fmt.Sprintf("%s[%d]", path, i), e, t.Elem(), errs)
			}
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok && t.Elem().Kind() != reflect.Interface {
			for _, k := range sortedKeys(obj) {
				checkJSONFields(fmt.Sprintf("%s[%q]", path, k), obj[k], t.Elem(), errs)
			}
		}
	}
}

// joinPath names field within path ("" for the top).
func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// jsonField finds the field encoding/json would decode key into: an exact
// name first, then one equal without regard to case.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold reflect.StructField
	folded := false
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			if tag == "-" {
				continue
			}
			if n, _, _ := strings.Cut(tag, ","); n != "" {
				name = n
			}
		}
		if name == key {
			return f, true
		}
		if !folded && strings.EqualFold(name, key) {
			fold, folded = f, true
		}
	}
	return fold, folded
}

// emptyJSON reports whether a decoded JSON value is null, false, zero, an
// empty string, or an empty array or object.
func emptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func jsonKind(t reflect.Type) string {
	if t == durationType {
		return "an integer (nanoseconds)"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "an object"
	}
	return t.String()
}

package driverspec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
)

// FieldType is the type of one config field.
type FieldType int

// Field types. Values arrive from HCL, JSON or msgpack, so numbers may be
// any integer or float type and lists may be []any; Decode normalises them.
const (
	TypeString     FieldType = iota // string
	TypeInt                         // int64 (integral numbers, or numeric strings)
	TypeBool                        // bool (or "true"/"false")
	TypeDuration                    // time.Duration ("5s", or integer nanoseconds)
	TypeStringList                  // []string
	TypeStringMap                   // map[string]string (a block of string attributes, or a list of them, as HCL1 gives it)
	TypeBlock                       // map[string]any decoded with Field.Block (a map, or a list of at most one)
	TypeBlockList                   // []map[string]any, each decoded with Field.Block (repeated blocks)
)

func (t FieldType) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "integer"
	case TypeBool:
		return "bool"
	case TypeDuration:
		return "duration"
	case TypeStringList:
		return "list of strings"
	case TypeStringMap:
		return "map of strings"
	case TypeBlock:
		return "block"
	case TypeBlockList:
		return "list of blocks"
	}
	return "unknown"
}

// Field describes one key of a driver's config block.
type Field struct {
	Type     FieldType
	Required bool
	// Block is the schema of a TypeBlock or TypeBlockList field.
	Block Schema
	// Unsupported, when set, names a key the driver has in Nomad that
	// Drover does not act on: it is refused with this text after
	// "Drover does not support ".
	Unsupported string
}

// Schema is a driver's config block: key -> field. Keys not listed are
// rejected.
type Schema map[string]Field

// fieldPrefix names config fields in errors the way the job does
// ("Config.command"); the server adds the task's path in front.
const fieldPrefix = "Config."

// Decode checks cfg against the schema and returns it with every value
// normalised to the field's Go type (string, int64, bool, time.Duration,
// []string, map[string]string, map[string]any for a block,
// []map[string]any for repeated blocks). The error lists every problem as
// a *structs.ValidationError, fields named "Config.<key>" (nested:
// "Config.<block>.<key>", "Config.<block>[i].<key>"), sorted by key.
func (s Schema) Decode(cfg map[string]any) (map[string]any, error) {
	out, errs := s.decodeAt(strings.TrimSuffix(fieldPrefix, "."), cfg)
	if len(errs) > 0 {
		return nil, &structs.ValidationError{Errors: errs}
	}
	return out, nil
}

// decodeAt decodes cfg with the schema, naming fields under path.
func (s Schema) decodeAt(path string, cfg map[string]any) (map[string]any, []structs.FieldError) {
	out := make(map[string]any, len(cfg))
	var errs []structs.FieldError
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := path + "." + k
		f, ok := s[k]
		switch {
		case !ok:
			errs = append(errs, structs.FieldError{Field: name, Message: "unknown field"})
			continue
		case f.Unsupported != "":
			errs = append(errs, structs.FieldError{Field: name, Message: unsupportedPrefix + f.Unsupported})
			continue
		}
		var v any
		var err error
		switch f.Type {
		case TypeBlock:
			var m map[string]any
			if m, err = oneBlock(cfg[k]); err == nil && m != nil {
				var sub []structs.FieldError
				if v, sub = f.Block.decodeAt(name, m); len(sub) > 0 {
					errs = append(errs, sub...)
					continue
				}
			}
		case TypeBlockList:
			var ms []map[string]any
			if ms, err = blockList(cfg[k]); err == nil {
				l := make([]map[string]any, 0, len(ms))
				var sub []structs.FieldError
				for i, m := range ms {
					d, e := f.Block.decodeAt(name+"["+strconv.Itoa(i)+"]", m)
					sub = append(sub, e...)
					l = append(l, d)
				}
				if len(sub) > 0 {
					errs = append(errs, sub...)
					continue
				}
				v = l
			}
		default:
			v, err = convert(f.Type, cfg[k])
		}
		if err != nil {
			errs = append(errs, structs.FieldError{Field: name, Message: err.Error()})
			continue
		}
		if v != nil {
			out[k] = v
		}
	}
	required := make([]string, 0)
	for k, f := range s {
		if _, ok := cfg[k]; f.Required && !ok {
			required = append(required, k)
		}
	}
	sort.Strings(required)
	for _, k := range required {
		errs = append(errs, structs.FieldError{Field: path + "." + k, Message: "is required"})
	}
	return out, errs
}

// unsupportedPrefix starts the message for a key Drover refuses by name,
// as the job decoder's do.
const unsupportedPrefix = "Drover does not support "

// oneBlock accepts a block as a map or, as HCL1-compatible decoding gives
// it, a list of at most one map (nil for an empty list).
func oneBlock(v any) (map[string]any, error) {
	ms, err := blockList(v)
	if err != nil {
		return nil, err
	}
	switch len(ms) {
	case 0:
		return nil, nil
	case 1:
		return ms[0], nil
	}
	return nil, fmt.Errorf("must be a single block; got %d", len(ms))
}

// blockList accepts repeated blocks as a list of maps, or one map.
func blockList(v any) ([]map[string]any, error) {
	switch b := v.(type) {
	case map[string]any:
		return []map[string]any{b}, nil
	case []map[string]any:
		return b, nil
	case []any:
		out := make([]map[string]any, len(b))
		for i, e := range b {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("element %d must be a block; got %s", i, describe(e))
			}
			out[i] = m
		}
		return out, nil
	}
	return nil, fmt.Errorf("must be a block; got %s", describe(v))
}

// Validate is Decode without the result.
func (s Schema) Validate(cfg map[string]any) error {
	_, err := s.Decode(cfg)
	return err
}

func convert(t FieldType, v any) (any, error) {
	wrong := func() error { return fmt.Errorf("must be a %s; got %s", t, describe(v)) }
	switch t {
	case TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, wrong()
	case TypeInt:
		if s, ok := v.(string); ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, wrong()
			}
			return n, nil
		}
		if n, ok := toInt(v); ok {
			return n, nil
		}
		return nil, wrong()
	case TypeBool:
		switch b := v.(type) {
		case bool:
			return b, nil
		case string:
			if p, err := strconv.ParseBool(b); err == nil {
				return p, nil
			}
		}
		return nil, wrong()
	case TypeDuration:
		if s, ok := v.(string); ok {
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("must be a duration such as \"5s\"; %v", err)
			}
			if d < 0 {
				return nil, fmt.Errorf("must not be negative; got %s", s)
			}
			return d, nil
		}
		if n, ok := toInt(v); ok {
			if n < 0 {
				return nil, fmt.Errorf("must not be negative; got %d", n)
			}
			return time.Duration(n), nil
		}
		return nil, wrong()
	case TypeStringList:
		switch l := v.(type) {
		case []string:
			return append([]string(nil), l...), nil
		case []any:
			out := make([]string, len(l))
			for i, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("element %d must be a string; got %s", i, describe(e))
				}
				out[i] = s
			}
			return out, nil
		}
		return nil, wrong()
	case TypeStringMap:
		switch m := v.(type) {
		case map[string]string:
			out := make(map[string]string, len(m))
			for k, e := range m {
				out[k] = e
			}
			return out, nil
		case map[string]any, []any, []map[string]any:
			// A block of attributes, or (HCL1-compatible decoding of
			// `labels { ... }`) a list of them, merged in order.
			ms, err := blockList(m)
			if err != nil {
				return nil, wrong()
			}
			out := make(map[string]string)
			for _, mm := range ms {
				for k, e := range mm {
					s, ok := scalarString(e)
					if !ok {
						return nil, fmt.Errorf("value of %q must be a string; got %s", k, describe(e))
					}
					out[k] = s
				}
			}
			return out, nil
		}
		return nil, wrong()
	}
	return nil, fmt.Errorf("unsupported field type %d", t)
}

// scalarString is a map value as a string: strings as they are, and
// integers and bools written out, as HCL's conversion to string does.
func scalarString(v any) (string, bool) {
	switch e := v.(type) {
	case string:
		return e, true
	case bool:
		return strconv.FormatBool(e), true
	}
	if n, ok := toInt(v); ok {
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

// toInt accepts any integer type and integral floats (JSON numbers).
func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint:
		return int64(n), n <= math.MaxInt64
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n <= math.MaxInt64
	case float32:
		return int64(n), float32(int64(n)) == n
	case float64:
		return int64(n), float64(int64(n)) == n && math.Abs(n) < 1<<62
	}
	return 0, false
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case []any, []string:
		return "a list"
	case map[string]any, map[string]string:
		return "a map"
	}
	if _, ok := toInt(v); ok {
		return "a number"
	}
	switch v.(type) {
	case float32, float64:
		return "a fractional number"
	}
	return fmt.Sprintf("%T", v)
}

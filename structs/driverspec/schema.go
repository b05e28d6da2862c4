package driverspec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
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
	TypeStringMap                   // map[string]string
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
	}
	return "unknown"
}

// Field describes one key of a driver's config block.
type Field struct {
	Type     FieldType
	Required bool
}

// Schema is a driver's config block: key -> field. Keys not listed are
// rejected.
type Schema map[string]Field

// fieldPrefix names config fields in errors the way the job does
// ("Config.command"); the server adds the task's path in front.
const fieldPrefix = "Config."

// Decode checks cfg against the schema and returns it with every value
// normalised to the field's Go type (string, int64, bool, time.Duration,
// []string, map[string]string). The error lists every problem as a
// *structs.ValidationError, fields named "Config.<key>", sorted by key.
func (s Schema) Decode(cfg map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(cfg))
	var errs []structs.FieldError
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := s[k]
		if !ok {
			errs = append(errs, structs.FieldError{Field: fieldPrefix + k, Message: "unknown field"})
			continue
		}
		v, err := convert(f.Type, cfg[k])
		if err != nil {
			errs = append(errs, structs.FieldError{Field: fieldPrefix + k, Message: err.Error()})
			continue
		}
		out[k] = v
	}
	required := make([]string, 0)
	for k, f := range s {
		if _, ok := cfg[k]; f.Required && !ok {
			required = append(required, k)
		}
	}
	sort.Strings(required)
	for _, k := range required {
		errs = append(errs, structs.FieldError{Field: fieldPrefix + k, Message: "is required"})
	}
	if len(errs) > 0 {
		return nil, &structs.ValidationError{Errors: errs}
	}
	return out, nil
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
		case map[string]any:
			out := make(map[string]string, len(m))
			for k, e := range m {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("value of %q must be a string; got %s", k, describe(e))
				}
				out[k] = s
			}
			return out, nil
		}
		return nil, wrong()
	}
	return nil, fmt.Errorf("unsupported field type %d", t)
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

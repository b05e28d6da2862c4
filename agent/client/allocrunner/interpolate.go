package allocrunner

import (
	"regexp"
	"strings"
)

// reference matches one ${...} in a string: a name made of letters,
// digits, '_', '-' and '.', optionally followed by one ["key"] index
// (${meta["rack-id"]}), with optional spaces inside the braces.
var reference = regexp.MustCompile(`\$\{\s*([A-Za-z0-9_.\-]+)(?:\["([^"\\]*)"\])?\s*\}`)

// replace returns s with each ${name} resolved: node.*, attr.* and meta.*
// from the node first, then env.NAME and NAME through envGet. A reference
// that resolves to nothing is left as written, as Nomad leaves it.
func (te *taskEnv) replace(s string, envGet func(string) (string, bool)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return reference.ReplaceAllStringFunc(s, func(ref string) string {
		m := reference.FindStringSubmatch(ref)
		name := m[1]
		if strings.Contains(ref, `["`) {
			name += "." + m[2]
		}
		if v, ok := te.node[name]; ok {
			return v
		}
		if rest, ok := strings.CutPrefix(name, "env."); ok {
			if v, ok := envGet(rest); ok {
				return v
			}
		}
		if v, ok := envGet(name); ok {
			return v
		}
		return ref
	})
}

// lookupEnv looks a name up in the task's environment.
func (te *taskEnv) lookupEnv(name string) (string, bool) {
	v, ok := te.env[name]
	return v, ok
}

// interpolate resolves the references in every string of a driver config
// (values at any depth of maps and lists; keys are left alone). It returns
// a new config and never modifies cfg, which the allocation's job shares.
func (te *taskEnv) interpolate(cfg map[string]any) map[string]any {
	if cfg == nil {
		return nil
	}
	return te.value(cfg).(map[string]any)
}

func (te *taskEnv) value(v any) any {
	switch x := v.(type) {
	case string:
		return te.replace(x, te.lookupEnv)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = te.value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = te.value(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = te.replace(e, te.lookupEnv)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = te.replace(e, te.lookupEnv)
		}
		return out
	}
	return v
}

package template

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseEnv reads the KEY=VALUE lines of an env = true template, as
// Nomad's client does (hashicorp/go-envparse's format): blank lines and
// lines starting with '#' are skipped, an "export " prefix is allowed,
// and a value may be double-quoted (with Go's escapes), single-quoted
// (taken as written) or bare (up to a " #" comment, trimmed).
func ParseEnv(text string) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !validEnvKey(k) {
			return nil, fmt.Errorf("line %d: expected KEY=VALUE", i+1)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: bad quoted value", i+1, k)
			}
			v = u
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		default:
			if c := strings.Index(v, " #"); c >= 0 {
				v = strings.TrimSpace(v[:c])
			}
		}
		out[k] = v
	}
	return out, nil
}

func validEnvKey(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		case r == '.' || r == '-':
		default:
			return false
		}
	}
	return true
}

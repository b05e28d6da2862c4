package main

import (
	"fmt"
)

// resolve finds the one object whose ID is id or starts with it, as
// Nomad's CLI does for every ID argument. list returns the candidates for
// a prefix (the server filters by prefix). An exact match wins over longer
// IDs it prefixes. With no match, or several, resolve prints why (and the
// matches, with table) and returns false; code is then the exit code.
func resolve[T any](e *env, kind, id string, list func(prefix string) ([]T, error),
	idOf func(T) string, table func([]T)) (found T, code int, ok bool) {
	matches, err := list(id)
	if err != nil {
		return found, errorf(e, "querying %ss: %v", kind, err), false
	}
	for _, m := range matches {
		if idOf(m) == id {
			return m, 0, true
		}
	}
	switch len(matches) {
	case 0:
		fmt.Fprintf(e.stderr, "No %s(s) with prefix or id %q found\n", kind, id)
		return found, 1, false
	case 1:
		return matches[0], 0, true
	}
	fmt.Fprintf(e.stderr, "Prefix matched multiple %ss\n\n", kind)
	table(matches)
	return found, 1, false
}

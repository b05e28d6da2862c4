package scheduler

import (
	"errors"
	"strconv"
	"strings"
)

// This file holds the small version parser behind the "version" and
// "semver" constraint operands.
//
// "version" is lenient: one or more numeric segments ("1", "1.2",
// "1.2.3.4"), an optional leading "v", an optional "-prerelease" and
// "+metadata". Missing segments compare as zero. A prerelease version only
// satisfies an ordering or pessimistic term whose own version has a
// prerelease on the same base segments, so "1.3.0-beta1" does not match
// ">= 1.2".
//
// "semver" is strict Semantic Versioning 2.0: exactly three segments, and
// prereleases order below their release as the spec says, so
// "1.3.0-beta1" matches ">= 1.2.0" and not ">= 1.3.0". It has no "~>".

// version is a parsed version number.
type version struct {
	segs []int64 // as written, at least one
	pre  string  // prerelease, without the '-'
}

var errBadVersion = errors.New("malformed version")

// parseVersion parses a version; strict demands exactly three segments.
func parseVersion(s string, strict bool) (version, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		if !validIdents(s[i+1:]) {
			return version{}, errBadVersion
		}
		s = s[:i]
	}
	var v version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		v.pre = s[i+1:]
		s = s[:i]
		if !validIdents(v.pre) {
			return version{}, errBadVersion
		}
	}
	for part := range strings.SplitSeq(s, ".") {
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil || n < 0 || part == "" || part[0] == '+' {
			return version{}, errBadVersion
		}
		if strict && len(part) > 1 && part[0] == '0' {
			return version{}, errBadVersion // semver forbids leading zeros
		}
		v.segs = append(v.segs, n)
	}
	if strict && len(v.segs) != 3 {
		return version{}, errBadVersion
	}
	return v, nil
}

// validIdents reports whether s is a non-empty dot-separated list of
// non-empty [0-9A-Za-z-] identifiers.
func validIdents(s string) bool {
	if s == "" {
		return false
	}
	for id := range strings.SplitSeq(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
	}
	return true
}

func (v version) seg(i int) int64 {
	if i < len(v.segs) {
		return v.segs[i]
	}
	return 0
}

// compareBase compares the numeric segments only, padding with zeros.
func (v version) compareBase(o version) int {
	n := max(len(v.segs), len(o.segs))
	for i := 0; i < n; i++ {
		a, b := v.seg(i), o.seg(i)
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}

// compare orders v and o by segments, then prerelease (a release sorts
// after its prereleases; prerelease identifiers compare as Semantic
// Versioning 2.0 says).
func (v version) compare(o version) int {
	if c := v.compareBase(o); c != 0 {
		return c
	}
	return comparePre(v.pre, o.pre)
}

func comparePre(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := compareIdent(as[i], bs[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

// compareIdent: numeric identifiers compare numerically and sort before
// alphanumeric ones, which compare in ASCII order.
func compareIdent(a, b string) int {
	an, aErr := strconv.ParseUint(a, 10, 64)
	bn, bErr := strconv.ParseUint(b, 10, 64)
	switch {
	case aErr == nil && bErr == nil:
		if an == bn {
			return 0
		}
		if an < bn {
			return -1
		}
		return 1
	case aErr == nil:
		return -1
	case bErr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// versionTerm is one "op version" clause of a constraint.
type versionTerm struct {
	op string // "=", "!=", ">", ">=", "<", "<=", "~>"
	v  version
}

// versionConstraint is a comma-separated conjunction of terms, such as
// ">= 1.2, < 2.0" or "~> 1.2".
type versionConstraint struct {
	terms  []versionTerm
	strict bool
}

var versionOps = []string{"~>", ">=", "<=", "!=", ">", "<", "="} // longest first

// parseVersionConstraint parses a constraint; strict selects semver rules.
func parseVersionConstraint(s string, strict bool) (*versionConstraint, error) {
	vc := &versionConstraint{strict: strict}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		op := "="
		for _, cand := range versionOps {
			if strings.HasPrefix(part, cand) {
				op, part = cand, part[len(cand):]
				break
			}
		}
		if strict && op == "~>" {
			return nil, errors.New("semver constraints do not support ~>")
		}
		v, err := parseVersion(part, strict)
		if err != nil {
			return nil, err
		}
		vc.terms = append(vc.terms, versionTerm{op: op, v: v})
	}
	return vc, nil
}

// check reports whether v satisfies every term.
func (vc *versionConstraint) check(v version) bool {
	for _, t := range vc.terms {
		if !vc.checkTerm(t, v) {
			return false
		}
	}
	return true
}

func (vc *versionConstraint) checkTerm(t versionTerm, v version) bool {
	if !vc.strict && t.op != "=" && t.op != "!=" && !lenientPrereleaseOK(v, t.v) {
		return false
	}
	c := v.compare(t.v)
	switch t.op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case "~>":
		return c >= 0 && pessimisticCeiling(v, t.v)
	}
	return false
}

// lenientPrereleaseOK: under "version", a prerelease only matches ordering
// terms whose version is a prerelease of the same base.
func lenientPrereleaseOK(v, term version) bool {
	switch {
	case v.pre != "" && term.pre != "":
		return v.compareBase(term) == 0
	case v.pre != "":
		return false
	}
	return true
}

// pessimisticCeiling checks the upper half of "~> X.Y[.Z]": every segment
// before the last written one must be equal ("~> 1.2" allows 1.x, x >= 2;
// "~> 1.2.3" allows 1.2.x). A one-segment "~> 1" allows 1.x.
func pessimisticCeiling(v, term version) bool {
	fixed := len(term.segs) - 1
	if fixed == 0 {
		fixed = 1
	}
	for i := 0; i < fixed; i++ {
		if v.seg(i) != term.seg(i) {
			return false
		}
	}
	return true
}

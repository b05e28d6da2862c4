package scheduler

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/drover-project/drover/structs"
)

// This file compiles a structs.Constraint once per evaluation into a
// checker that evaluates it against a node without allocating.

// targetKind says where a constraint target's value comes from.
type targetKind uint8

const (
	targetLiteral    targetKind = iota // the text itself
	targetAttr                         // ${attr.<key>}
	targetMeta                         // ${meta.<key>}
	targetNodeID                       // ${node.unique.id}
	targetNodeName                     // ${node.unique.name}
	targetDatacenter                   // ${node.datacenter}
	targetNodeClass                    // ${node.class}
	targetNodePool                     // ${node.pool}
	targetUnknown                      // ${something.else}: never resolves
)

// target is a parsed constraint target.
type target struct {
	kind targetKind
	key  string // literal text, or the attribute/meta key
}

func parseTarget(s string) target {
	if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") {
		return target{kind: targetLiteral, key: s}
	}
	inner := s[2 : len(s)-1]
	switch {
	case strings.HasPrefix(inner, "attr."):
		return target{kind: targetAttr, key: inner[len("attr."):]}
	case strings.HasPrefix(inner, "meta."):
		return target{kind: targetMeta, key: inner[len("meta."):]}
	case inner == "node.unique.id":
		return target{kind: targetNodeID}
	case inner == "node.unique.name":
		return target{kind: targetNodeName}
	case inner == "node.datacenter":
		return target{kind: targetDatacenter}
	case inner == "node.class":
		return target{kind: targetNodeClass}
	case inner == "node.pool":
		return target{kind: targetNodePool}
	}
	return target{kind: targetUnknown, key: inner}
}

// resolve returns the target's value on n and whether it is set.
func (t target) resolve(n *structs.Node) (string, bool) {
	switch t.kind {
	case targetLiteral:
		return t.key, true
	case targetAttr:
		v, ok := n.Attributes[t.key]
		return v, ok
	case targetMeta:
		v, ok := n.Meta[t.key]
		return v, ok
	case targetNodeID:
		return n.ID, true
	case targetNodeName:
		return n.Name, true
	case targetDatacenter:
		return n.Datacenter, true
	case targetNodeClass:
		return n.NodeClass, true
	case targetNodePool:
		return n.NodePool, true
	}
	return "", false
}

// unique reports whether the target depends on per-node identity rather
// than on what the node's computed class captures.
func (t target) unique() bool {
	switch t.kind {
	case targetNodeID, targetNodeName, targetUnknown:
		return true
	case targetAttr, targetMeta:
		return strings.HasPrefix(t.key, "unique.")
	}
	return false
}

// constraintChecker is a compiled node constraint (every operand except
// distinct_hosts and distinct_property, which depend on the plan).
type constraintChecker struct {
	c       *structs.Constraint
	reason  string // c.String(), the key in AllocMetric.ConstraintFiltered
	op      string
	l, r    target
	rNum    float64 // r parsed as a number, when rIsNum
	rIsNum  bool
	re      *regexp.Regexp     // regexp, when r is a literal
	vc      *versionConstraint // version/semver, when r is a literal
	vcErr   bool               // the literal version constraint does not parse
	set     []string           // set_contains*, when r is a literal
	cache   *compileCache      // for targets that are interpolated
	escapes bool               // result is not a function of the computed class
}

// compileCache shares compiled regexps and version constraints across the
// whole evaluation, keyed by their source text.
type compileCache struct {
	regexps  map[string]*regexp.Regexp // nil value: does not compile
	versions map[string]*versionConstraint
}

func newCompileCache() *compileCache {
	return &compileCache{regexps: map[string]*regexp.Regexp{}, versions: map[string]*versionConstraint{}}
}

func (cc *compileCache) regexp(pattern string) *regexp.Regexp {
	re, ok := cc.regexps[pattern]
	if !ok {
		re, _ = regexp.Compile(pattern) // nil on error: never matches
		cc.regexps[pattern] = re
	}
	return re
}

func (cc *compileCache) version(text string, strict bool) *versionConstraint {
	key := text
	if strict {
		key = "\x00" + text
	}
	vc, ok := cc.versions[key]
	if !ok {
		vc, _ = parseVersionConstraint(text, strict) // nil on error: never matches
		cc.versions[key] = vc
	}
	return vc
}

// newConstraintChecker compiles c. Literal right-hand sides are parsed
// here, once; interpolated ones go through cache per node.
func newConstraintChecker(c *structs.Constraint, cache *compileCache) *constraintChecker {
	op := c.Operand
	if op == "" || op == structs.ConstraintEqualAlt {
		op = structs.ConstraintEqual
	}
	k := &constraintChecker{c: c, reason: c.String(), op: op,
		l: parseTarget(c.LTarget), r: parseTarget(c.RTarget), cache: cache}
	k.escapes = k.l.unique() || k.r.unique()
	if k.r.kind != targetLiteral {
		return k
	}
	switch op {
	case structs.ConstraintLess, structs.ConstraintLessEqual, structs.ConstraintGreater, structs.ConstraintGreaterEqual:
		k.rNum, k.rIsNum = parseNumber(k.r.key)
	case structs.ConstraintRegex:
		k.re = cache.regexp(k.r.key)
	case structs.ConstraintVersion, structs.ConstraintSemver:
		k.vc = cache.version(k.r.key, op == structs.ConstraintSemver)
		k.vcErr = k.vc == nil
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll, structs.ConstraintSetContainsAny:
		k.set = splitSet(k.r.key)
	}
	return k
}

// feasible reports whether node n satisfies the constraint.
func (k *constraintChecker) feasible(n *structs.Node) bool {
	lv, lok := k.l.resolve(n)
	rv, rok := k.r.resolve(n)
	switch k.op {
	case structs.ConstraintEqual:
		return lok && rok && lv == rv
	case structs.ConstraintNotEqual:
		if lok && rok {
			return lv != rv
		}
		// As Nomad: an unset target differs from any set one; two unset
		// targets are equal.
		return lok != rok
	case structs.ConstraintAttributeIsSet:
		return lok
	case structs.ConstraintAttributeIsUnset:
		return !lok
	}
	if !lok || !rok {
		return false
	}
	switch k.op {
	case structs.ConstraintLess, structs.ConstraintLessEqual, structs.ConstraintGreater, structs.ConstraintGreaterEqual:
		return k.order(lv, rv)
	case structs.ConstraintRegex:
		re := k.re
		if k.r.kind != targetLiteral {
			re = k.cache.regexp(rv)
		}
		return re != nil && re.MatchString(lv)
	case structs.ConstraintVersion, structs.ConstraintSemver:
		return k.version(lv, rv)
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll:
		return setContains(lv, k.rightSet(rv), true)
	case structs.ConstraintSetContainsAny:
		return setContains(lv, k.rightSet(rv), false)
	case structs.ConstraintDistinctHosts, structs.ConstraintDistinctProperty:
		return true // checked against the plan by their own iterators
	}
	return false
}

// order compares numerically when both sides are numbers, else lexically.
func (k *constraintChecker) order(lv, rv string) bool {
	var c int
	rn, rIsNum := k.rNum, k.rIsNum
	if k.r.kind != targetLiteral {
		rn, rIsNum = parseNumber(rv)
	}
	if ln, ok := parseNumber(lv); ok && rIsNum {
		switch {
		case ln < rn:
			c = -1
		case ln > rn:
			c = 1
		}
	} else {
		c = strings.Compare(lv, rv)
	}
	switch k.op {
	case structs.ConstraintLess:
		return c < 0
	case structs.ConstraintLessEqual:
		return c <= 0
	case structs.ConstraintGreater:
		return c > 0
	}
	return c >= 0
}

func (k *constraintChecker) version(lv, rv string) bool {
	strict := k.op == structs.ConstraintSemver
	vc := k.vc
	if k.r.kind != targetLiteral {
		vc = k.cache.version(rv, strict)
	} else if k.vcErr {
		return false
	}
	if vc == nil {
		return false
	}
	v, err := parseVersion(lv, strict)
	return err == nil && vc.check(v)
}

func (k *constraintChecker) rightSet(rv string) []string {
	if k.r.kind == targetLiteral {
		return k.set
	}
	return splitSet(rv)
}

func parseNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f, err == nil
}

func splitSet(s string) []string {
	parts := strings.Split(s, ",")
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// setContains reports whether the comma-separated list have holds all
// (or, with all false, any) of want. It scans without allocating.
func setContains(have string, want []string, all bool) bool {
	for _, w := range want {
		found := listHas(have, w)
		if all && !found {
			return false
		}
		if !all && found {
			return true
		}
	}
	return all
}

func listHas(list, item string) bool {
	for list != "" {
		var part string
		part, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(part) == item {
			return true
		}
	}
	return false
}

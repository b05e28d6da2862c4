package acl

import (
	"slices"
	"strings"
)

// capabilitySet is the capabilities granted for one namespace (or host
// volume, or node pool) rule after merging.
type capabilitySet map[string]struct{}

func (c capabilitySet) has(capability string) bool {
	_, ok := c[capability]
	return ok
}

// denied reports whether the set holds the deny capability, which
// overrides everything else in it.
func (c capabilitySet) denied() bool { return c.has("deny") }

// globRule is a rule keyed by a name holding '*'.
type globRule struct {
	pattern string
	caps    capabilitySet
}

// namedRules are the rules of one kind keyed by name: exact names in a
// map, globs in a list sorted by pattern.
type namedRules struct {
	exact map[string]capabilitySet
	globs []globRule
}

// lookup returns the capabilities for name: the rule of exactly that
// name if there is one; else, of the glob rules that match it, the most
// specific, i.e. the one with the smallest difference len(name) -
// len(pattern) + count of '*' in pattern (Nomad's measure), ties broken
// by the pattern's byte order. A '*' matches any run of characters,
// including none; nothing else is special. No rule: an empty set.
func (r *namedRules) lookup(name string) capabilitySet {
	if c, ok := r.exact[name]; ok {
		return c
	}
	var best capabilitySet
	bestDiff := 0
	for _, g := range r.globs {
		if !globMatch(g.pattern, name) {
			continue
		}
		diff := len(name) - len(g.pattern) + strings.Count(g.pattern, "*")
		if best == nil || diff < bestDiff {
			best, bestDiff = g.caps, diff
		}
	}
	return best
}

func (r *namedRules) add(name string, caps []string) {
	set := r.exact[name]
	if strings.Contains(name, "*") {
		i := slices.IndexFunc(r.globs, func(g globRule) bool { return g.pattern == name })
		if i < 0 {
			r.globs = append(r.globs, globRule{pattern: name, caps: capabilitySet{}})
			i = len(r.globs) - 1
		}
		set = r.globs[i].caps
	} else if set == nil {
		if r.exact == nil {
			r.exact = map[string]capabilitySet{}
		}
		set = capabilitySet{}
		r.exact[name] = set
	}
	for _, c := range caps {
		set[c] = struct{}{}
	}
}

func (r *namedRules) sort() {
	slices.SortFunc(r.globs, func(a, b globRule) int { return strings.Compare(a.pattern, b.pattern) })
}

// globMatch reports whether name matches pattern, where '*' matches any
// run of characters (including none).
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, last)
}

// ACL is the merged permissions of one token. It is immutable once built
// and safe for concurrent use.
type ACL struct {
	management bool
	namespaces namedRules
	// variables are the variables path rules by namespace name or glob
	// (the namespace is chosen as for namespaces, then the path).
	variables map[string]*namedRules
	// workloadNS is, for a workload identity's ACL, its namespace, where
	// it may read services.
	workloadNS  string
	hostVolumes namedRules
	nodePools   namedRules
	agent       string
	node        string
	operator    string
	quota       string
	plugin      string
}

// ManagementACL allows everything.
var ManagementACL = &ACL{management: true}

// DenyAll allows nothing: the ACL of a request whose token is unknown
// and of the anonymous token without an "anonymous" policy.
var DenyAll = &ACL{}

// New merges policies into one ACL. Capabilities are united, and for the
// singleton rules (agent, node, operator, quota, plugin) the highest
// level is kept, except that deny anywhere wins, as in Nomad.
func New(management bool, policies []*Policy) *ACL {
	if management {
		return ManagementACL
	}
	a := &ACL{}
	for _, p := range policies {
		for _, ns := range p.Namespaces {
			a.namespaces.add(ns.Name, ns.Capabilities)
			a.addVariables(ns.Name, ns.Variables)
		}
		for _, hv := range p.HostVolumes {
			a.hostVolumes.add(hv.Name, hv.Capabilities)
		}
		for _, np := range p.NodePools {
			a.nodePools.add(np.Name, np.Capabilities)
		}
		a.agent = maxLevel(a.agent, p.Agent)
		a.node = maxLevel(a.node, p.Node)
		a.operator = maxLevel(a.operator, p.Operator)
		a.quota = maxLevel(a.quota, p.Quota)
		a.plugin = maxLevel(a.plugin, p.Plugin)
	}
	a.namespaces.sort()
	for _, r := range a.variables {
		r.sort()
	}
	a.hostVolumes.sort()
	a.nodePools.sort()
	return a
}

// levelRank orders policy levels; deny is handled before ranking.
var levelRank = map[string]int{"": 0, PolicyList: 1, PolicyRead: 2, PolicyWrite: 3}

func maxLevel(a, b string) string {
	if a == PolicyDeny || b == PolicyDeny {
		return PolicyDeny
	}
	if levelRank[b] > levelRank[a] {
		return b
	}
	return a
}

// IsManagement reports whether the ACL is a management token's.
func (a *ACL) IsManagement() bool { return a.management }

// AllowNamespaceOperation reports whether capability is granted in
// namespace ns (exact name, else the most specific matching glob; deny
// in the matched rule refuses everything).
func (a *ACL) AllowNamespaceOperation(ns, capability string) bool {
	if a.management {
		return true
	}
	caps := a.namespaces.lookup(ns)
	return caps != nil && !caps.denied() && caps.has(capability)
}

// AllowNamespace reports whether any capability at all is granted in ns.
func (a *ACL) AllowNamespace(ns string) bool {
	if a.management {
		return true
	}
	caps := a.namespaces.lookup(ns)
	return len(caps) > 0 && !caps.denied()
}

// AllowHostVolumeOperation reports whether capability is granted on the
// named host volume.
func (a *ACL) AllowHostVolumeOperation(name, capability string) bool {
	if a.management {
		return true
	}
	caps := a.hostVolumes.lookup(name)
	return caps != nil && !caps.denied() && caps.has(capability)
}

// AllowNodePoolOperation reports whether capability is granted on the
// named node pool.
func (a *ACL) AllowNodePoolOperation(name, capability string) bool {
	if a.management {
		return true
	}
	caps := a.nodePools.lookup(name)
	return caps != nil && !caps.denied() && caps.has(capability)
}

func (a *ACL) allowLevel(level, want string) bool {
	switch {
	case a.management:
		return true
	case want == PolicyRead:
		return level == PolicyRead || level == PolicyWrite
	case want == PolicyWrite:
		return level == PolicyWrite
	}
	return false
}

// AllowAgentRead and the methods below check the singleton rules: read
// is granted by read or write, write only by write.
func (a *ACL) AllowAgentRead() bool     { return a.allowLevel(a.agent, PolicyRead) }
func (a *ACL) AllowAgentWrite() bool    { return a.allowLevel(a.agent, PolicyWrite) }
func (a *ACL) AllowNodeRead() bool      { return a.allowLevel(a.node, PolicyRead) }
func (a *ACL) AllowNodeWrite() bool     { return a.allowLevel(a.node, PolicyWrite) }
func (a *ACL) AllowOperatorRead() bool  { return a.allowLevel(a.operator, PolicyRead) }
func (a *ACL) AllowOperatorWrite() bool { return a.allowLevel(a.operator, PolicyWrite) }
func (a *ACL) AllowQuotaRead() bool     { return a.allowLevel(a.quota, PolicyRead) }
func (a *ACL) AllowQuotaWrite() bool    { return a.allowLevel(a.quota, PolicyWrite) }

// AllowPluginRead reports whether the plugin rule is read; AllowPluginList
// whether it is list or read.
func (a *ACL) AllowPluginRead() bool { return a.management || a.plugin == PolicyRead }
func (a *ACL) AllowPluginList() bool {
	return a.management || a.plugin == PolicyRead || a.plugin == PolicyList
}

// AllowAllNamespaces reports whether capability is granted in every
// namespace, for requests across namespaces (namespace "*"): management,
// or a rule "*" granting it and no rule anywhere that denies or lacks it.
func (a *ACL) AllowAllNamespaces(capability string) bool {
	if a.management {
		return true
	}
	star := a.namespaces.lookup("*")
	if star == nil || star.denied() || !star.has(capability) {
		return false
	}
	for _, c := range a.namespaces.exact {
		if c.denied() || !c.has(capability) {
			return false
		}
	}
	for _, g := range a.namespaces.globs {
		if g.caps.denied() || !g.caps.has(capability) {
			return false
		}
	}
	return true
}

func (a *ACL) addVariables(ns string, rules []*VariablesPathRule) {
	if len(rules) == 0 {
		return
	}
	if a.variables == nil {
		a.variables = map[string]*namedRules{}
	}
	r := a.variables[ns]
	if r == nil {
		r = &namedRules{}
		a.variables[ns] = r
	}
	for _, p := range rules {
		r.add(p.PathSpec, p.Capabilities)
	}
}

// variablesIn returns the variables rules that apply in namespace ns:
// those of the rule named ns exactly, else of the most specific
// namespace glob that matches it (Nomad's choice for namespaces).
func (a *ACL) variablesIn(ns string) *namedRules {
	if r, ok := a.variables[ns]; ok {
		return r
	}
	var best *namedRules
	bestDiff, bestPattern := 0, ""
	for pattern, r := range a.variables {
		if !strings.Contains(pattern, "*") || !globMatch(pattern, ns) {
			continue
		}
		diff := len(ns) - len(pattern) + strings.Count(pattern, "*")
		if best == nil || diff < bestDiff || (diff == bestDiff && pattern < bestPattern) {
			best, bestDiff, bestPattern = r, diff, pattern
		}
	}
	return best
}

// AllowVariableOperation reports whether capability (VariablesCapability*)
// is granted on the variable at path in namespace ns: the path rule of
// exactly that path, else the most specific matching path glob; deny in
// it refuses everything.
func (a *ACL) AllowVariableOperation(ns, path, capability string) bool {
	if a.management {
		return true
	}
	r := a.variablesIn(ns)
	if r == nil {
		return false
	}
	caps := r.lookup(path)
	return caps != nil && !caps.denied() && caps.has(capability)
}

// AllowVariableSearch reports whether the ACL grants anything at all on
// variables in namespace ns ("*": in any namespace): what a list needs
// before its answer is filtered path by path.
func (a *ACL) AllowVariableSearch(ns string) bool {
	if a.management {
		return true
	}
	if ns == "*" {
		return len(a.variables) > 0
	}
	return a.variablesIn(ns) != nil
}

// NewWorkload is the ACL of a workload identity in namespace ns: read
// and list on exactly the variable paths given (no globbing: a '*' in a
// job name is a character), and reading services in ns. Nothing else.
func NewWorkload(ns string, paths []string) *ACL {
	r := &namedRules{exact: make(map[string]capabilitySet, len(paths))}
	for _, p := range paths {
		r.exact[p] = capabilitySet{VariablesCapabilityRead: {}, VariablesCapabilityList: {}}
	}
	return &ACL{variables: map[string]*namedRules{ns: r}, workloadNS: ns}
}

// AllowServiceRead reports whether services in ns may be read: read-job
// in ns, or a workload identity of ns.
func (a *ACL) AllowServiceRead(ns string) bool {
	return (a.workloadNS != "" && a.workloadNS == ns) || a.AllowNamespaceOperation(ns, NamespaceCapabilityReadJob)
}

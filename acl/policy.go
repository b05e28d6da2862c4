package acl

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"

	"github.com/drover-project/drover/internal/hcllimit"
)

// Policy levels: the values of a rule's `policy = "..."`. Merging keeps
// the most privilege, except that deny always wins.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
	// PolicyScale is valid only in namespace rules.
	PolicyScale = "scale"
	// PolicyList is valid only in the plugin rule.
	PolicyList = "list"
)

// Namespace capabilities, Nomad's names.
const (
	NamespaceCapabilityDeny                 = "deny"
	NamespaceCapabilityListJobs             = "list-jobs"
	NamespaceCapabilityParseJob             = "parse-job"
	NamespaceCapabilityReadJob              = "read-job"
	NamespaceCapabilitySubmitJob            = "submit-job"
	NamespaceCapabilityDispatchJob          = "dispatch-job"
	NamespaceCapabilityReadLogs             = "read-logs"
	NamespaceCapabilityReadFS               = "read-fs"
	NamespaceCapabilityAllocExec            = "alloc-exec"
	NamespaceCapabilityAllocNodeExec        = "alloc-node-exec"
	NamespaceCapabilityAllocLifecycle       = "alloc-lifecycle"
	NamespaceCapabilityCSIRegisterPlugin    = "csi-register-plugin"
	NamespaceCapabilityCSIWriteVolume       = "csi-write-volume"
	NamespaceCapabilityCSIReadVolume        = "csi-read-volume"
	NamespaceCapabilityCSIListVolume        = "csi-list-volume"
	NamespaceCapabilityCSIMountVolume       = "csi-mount-volume"
	NamespaceCapabilityListScalingPolicies  = "list-scaling-policies"
	NamespaceCapabilityReadScalingPolicy    = "read-scaling-policy"
	NamespaceCapabilityReadJobScaling       = "read-job-scaling"
	NamespaceCapabilityScaleJob             = "scale-job"
	NamespaceCapabilitySentinelOverride     = "sentinel-override"
	NamespaceCapabilitySubmitRecommendation = "submit-recommendation"
)

// Host volume capabilities.
const (
	HostVolumeCapabilityDeny           = "deny"
	HostVolumeCapabilityMountReadOnly  = "mount-readonly"
	HostVolumeCapabilityMountReadWrite = "mount-readwrite"
)

// Node pool capabilities.
const (
	NodePoolCapabilityDeny   = "deny"
	NodePoolCapabilityRead   = "read"
	NodePoolCapabilityWrite  = "write"
	NodePoolCapabilityDelete = "delete"
)

var namespaceCapabilities = []string{
	NamespaceCapabilityDeny, NamespaceCapabilityListJobs, NamespaceCapabilityParseJob,
	NamespaceCapabilityReadJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
	NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
	NamespaceCapabilityAllocNodeExec, NamespaceCapabilityAllocLifecycle,
	NamespaceCapabilityCSIRegisterPlugin, NamespaceCapabilityCSIWriteVolume,
	NamespaceCapabilityCSIReadVolume, NamespaceCapabilityCSIListVolume,
	NamespaceCapabilityCSIMountVolume, NamespaceCapabilityListScalingPolicies,
	NamespaceCapabilityReadScalingPolicy, NamespaceCapabilityReadJobScaling,
	NamespaceCapabilityScaleJob, NamespaceCapabilitySentinelOverride,
	NamespaceCapabilitySubmitRecommendation,
}

// Nomad's expansion of namespace policy levels into capabilities.
var (
	namespaceRead = []string{
		NamespaceCapabilityListJobs, NamespaceCapabilityParseJob, NamespaceCapabilityReadJob,
		NamespaceCapabilityCSIListVolume, NamespaceCapabilityCSIReadVolume,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityListScalingPolicies,
		NamespaceCapabilityReadScalingPolicy,
	}
	namespaceWrite = append(slices.Clone(namespaceRead),
		NamespaceCapabilityScaleJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
		NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
		NamespaceCapabilityAllocLifecycle, NamespaceCapabilityCSIMountVolume,
		NamespaceCapabilityCSIWriteVolume, NamespaceCapabilitySubmitRecommendation,
	)
	namespaceScale = []string{
		NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
	}
)

// Variables capabilities (a namespace's `variables { path "..." { ... } }`),
// Nomad's names. read implies list, as in Nomad; deny overrides the rest.
const (
	VariablesCapabilityDeny    = "deny"
	VariablesCapabilityRead    = "read"
	VariablesCapabilityList    = "list"
	VariablesCapabilityWrite   = "write"
	VariablesCapabilityDestroy = "destroy"
)

var variablesCapabilities = []string{VariablesCapabilityDeny, VariablesCapabilityRead,
	VariablesCapabilityList, VariablesCapabilityWrite, VariablesCapabilityDestroy}

// Names a rule may be keyed by: letters, digits, '-' and the glob '*'
// (node pools also '_'), at most 128 characters, as in Nomad.
var (
	validNamespace = regexp.MustCompile(`^[a-zA-Z0-9-*]{1,128}$`)
	validVolume    = regexp.MustCompile(`^[a-zA-Z0-9-*]{1,128}$`)
	validNodePool  = regexp.MustCompile(`^[a-zA-Z0-9-_*]{1,128}$`)
)

// Policy is one parsed policy document.
type Policy struct {
	Namespaces  []*NamespaceRule
	HostVolumes []*NamedRule
	NodePools   []*NamedRule
	// Levels of the singleton rules; "" when the rule is absent.
	Agent    string
	Node     string
	Operator string
	Quota    string
	Plugin   string
}

// NamespaceRule is a `namespace "<name or glob>" { ... }` block, with
// the policy level expanded into Capabilities.
type NamespaceRule struct {
	Name         string
	Policy       string
	Capabilities []string
	// Variables are the rules of the namespace's variables block, by
	// path or path glob (nil: no block).
	Variables []*VariablesPathRule
}

// VariablesPathRule is a `path "<path or glob>" { capabilities = [...] }`
// block inside a namespace's variables block.
type VariablesPathRule struct {
	PathSpec     string
	Capabilities []string
}

// NamedRule is a `host_volume` or `node_pool` block, expanded like a
// namespace rule.
type NamedRule struct {
	Name         string
	Policy       string
	Capabilities []string
}

// IsEmpty reports whether the policy has no rule at all (Nomad refuses
// such a policy).
func (p *Policy) IsEmpty() bool {
	return len(p.Namespaces) == 0 && len(p.HostVolumes) == 0 && len(p.NodePools) == 0 &&
		p.Agent == "" && p.Node == "" && p.Operator == "" && p.Quota == "" && p.Plugin == ""
}

// unsupportedBlocks are parts of Nomad's policy language Drover has no
// objects for; a policy that uses one is refused by name rather than
// stored and silently ignored.
var unsupportedBlocks = map[string]string{}

// The policy language's schema. Unknown blocks and attributes are found
// by hand so that Nomad features Drover lacks get a clear message.
var (
	topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "namespace", LabelNames: []string{"name"}},
		{Type: "host_volume", LabelNames: []string{"name"}},
		{Type: "node_pool", LabelNames: []string{"name"}},
		{Type: "agent"}, {Type: "node"}, {Type: "operator"}, {Type: "quota"}, {Type: "plugin"},
	}}
	namespaceSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "capabilities"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "variables"}},
	}
	levelSchema     = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "policy"}}}
	variablesSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "path", LabelNames: []string{"path"}}}}
	pathSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "capabilities", Required: true}}}
)

// Parse reads a policy's rules in Nomad's policy language: HCL, or JSON
// when the text starts with '{'. name is used in error positions. The
// error names what is wrong; a Nomad feature Drover does not support is
// refused with "Drover does not support ...".
func Parse(name, rules string) (*Policy, error) {
	var file *hcl.File
	var diags hcl.Diagnostics
	// The bounds of every HCL input (nesting, operator chains, size) are
	// checked before hcl's recursive parser sees the text.
	if strings.HasPrefix(strings.TrimSpace(rules), "{") {
		if diags = hcllimit.JSON(name, []byte(rules)); !diags.HasErrors() {
			file, diags = hcljson.Parse([]byte(rules), name)
		}
	} else if diags = hcllimit.HCL(name, []byte(rules)); !diags.HasErrors() {
		file, diags = hclsyntax.ParseConfig([]byte(rules), name, hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("Failed to parse ACL policy: %s", diags.Error())
	}
	p := &Policy{}
	if err := p.decode(file.Body); err != nil {
		return nil, err
	}
	if p.IsEmpty() {
		return nil, fmt.Errorf("Invalid policy: it grants nothing (no namespace, node, agent, operator, quota, plugin, host_volume or node_pool rule)")
	}
	return p, nil
}

func (p *Policy) decode(body hcl.Body) error {
	content, diags := body.Content(topSchema)
	if diags.HasErrors() {
		return unknownOrError(diags)
	}
	singles := map[string]*string{"agent": &p.Agent, "node": &p.Node, "operator": &p.Operator, "quota": &p.Quota, "plugin": &p.Plugin}
	for _, b := range content.Blocks {
		switch b.Type {
		case "namespace":
			r, err := decodeNamespace(b)
			if err != nil {
				return err
			}
			p.Namespaces = append(p.Namespaces, r)
		case "host_volume", "node_pool":
			r, err := decodeNamed(b)
			if err != nil {
				return err
			}
			if b.Type == "host_volume" {
				p.HostVolumes = append(p.HostVolumes, r)
			} else {
				p.NodePools = append(p.NodePools, r)
			}
		default:
			level, err := decodeLevel(b)
			if err != nil {
				return err
			}
			valid := isPolicyValid(level)
			if b.Type == "plugin" {
				valid = level == PolicyDeny || level == PolicyRead || level == PolicyList
			}
			if !valid {
				return fmt.Errorf("Invalid %s policy: %q", b.Type, level)
			}
			*singles[b.Type] = level
		}
	}
	return nil
}

func decodeNamespace(b *hcl.Block) (*NamespaceRule, error) {
	r := &NamespaceRule{Name: b.Labels[0]}
	if !validNamespace.MatchString(r.Name) {
		return nil, fmt.Errorf("Invalid namespace name: %q", r.Name)
	}
	content, diags := b.Body.Content(namespaceSchema)
	if diags.HasErrors() {
		return nil, unknownOrError(diags)
	}
	for _, vb := range content.Blocks {
		if r.Variables != nil {
			return nil, fmt.Errorf("namespace %q: only one variables block is allowed", r.Name)
		}
		vars, err := decodeVariables(r.Name, vb)
		if err != nil {
			return nil, err
		}
		r.Variables = vars
	}
	var err error
	if r.Policy, r.Capabilities, err = decodeAttrs(content); err != nil {
		return nil, fmt.Errorf("namespace %q: %w", r.Name, err)
	}
	if r.Policy != "" && !isPolicyValid(r.Policy) && r.Policy != PolicyScale {
		return nil, fmt.Errorf("Invalid namespace policy %q in namespace %q", r.Policy, r.Name)
	}
	for _, c := range r.Capabilities {
		if !slices.Contains(namespaceCapabilities, c) {
			return nil, fmt.Errorf("Invalid namespace capability %q in namespace %q", c, r.Name)
		}
	}
	r.Capabilities = append(r.Capabilities, expandNamespacePolicy(r.Policy)...)
	return r, nil
}

// decodeVariables reads a namespace's variables block, expanding each
// path's capabilities as Nomad does (read adds list; deny is alone).
func decodeVariables(ns string, b *hcl.Block) ([]*VariablesPathRule, error) {
	content, diags := b.Body.Content(variablesSchema)
	if diags.HasErrors() {
		return nil, unknownOrError(diags)
	}
	if len(content.Blocks) == 0 {
		return nil, fmt.Errorf("Invalid variable policy: no variable paths in namespace %s", ns)
	}
	out := make([]*VariablesPathRule, 0, len(content.Blocks))
	for _, pb := range content.Blocks {
		r := &VariablesPathRule{PathSpec: pb.Labels[0]}
		if r.PathSpec == "" {
			return nil, fmt.Errorf("Invalid missing variable path in namespace %s", ns)
		}
		if strings.HasPrefix(r.PathSpec, "/") {
			return nil, fmt.Errorf("Invalid variable path %q in namespace %s: cannot start with a leading '/'", r.PathSpec, ns)
		}
		pc, diags := pb.Body.Content(pathSchema)
		if diags.HasErrors() {
			return nil, unknownOrError(diags)
		}
		if d := gohcl.DecodeExpression(pc.Attributes["capabilities"].Expr, nil, &r.Capabilities); d.HasErrors() {
			return nil, fmt.Errorf("variables path %q in namespace %s: capabilities: %s", r.PathSpec, ns, d.Error())
		}
		for _, c := range r.Capabilities {
			if !slices.Contains(variablesCapabilities, c) {
				return nil, fmt.Errorf("Invalid variable capability '%s' in namespace %s", c, ns)
			}
		}
		r.Capabilities = expandVariablesCapabilities(r.Capabilities)
		out = append(out, r)
	}
	return out, nil
}

func expandVariablesCapabilities(caps []string) []string {
	if slices.Contains(caps, VariablesCapabilityDeny) {
		return []string{VariablesCapabilityDeny}
	}
	if slices.Contains(caps, VariablesCapabilityRead) && !slices.Contains(caps, VariablesCapabilityList) {
		caps = append(caps, VariablesCapabilityList)
	}
	return caps
}

func decodeNamed(b *hcl.Block) (*NamedRule, error) {
	r := &NamedRule{Name: b.Labels[0]}
	valid, caps, expand := validVolume, []string{HostVolumeCapabilityDeny, HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite}, expandHostVolumePolicy
	if b.Type == "node_pool" {
		valid, caps, expand = validNodePool, []string{NodePoolCapabilityDeny, NodePoolCapabilityRead, NodePoolCapabilityWrite, NodePoolCapabilityDelete}, expandNodePoolPolicy
	}
	if !valid.MatchString(r.Name) {
		return nil, fmt.Errorf("Invalid %s name: %q", b.Type, r.Name)
	}
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: namespaceSchema.Attributes})
	if diags.HasErrors() {
		return nil, unknownOrError(diags)
	}
	var err error
	if r.Policy, r.Capabilities, err = decodeAttrs(content); err != nil {
		return nil, fmt.Errorf("%s %q: %w", b.Type, r.Name, err)
	}
	if r.Policy != "" && !isPolicyValid(r.Policy) {
		return nil, fmt.Errorf("Invalid %s policy %q in %s %q", b.Type, r.Policy, b.Type, r.Name)
	}
	for _, c := range r.Capabilities {
		if !slices.Contains(caps, c) {
			return nil, fmt.Errorf("Invalid %s capability %q in %s %q", b.Type, c, b.Type, r.Name)
		}
	}
	r.Capabilities = append(r.Capabilities, expand(r.Policy)...)
	return r, nil
}

func decodeAttrs(content *hcl.BodyContent) (policy string, caps []string, err error) {
	if a, ok := content.Attributes["policy"]; ok {
		if diags := gohcl.DecodeExpression(a.Expr, nil, &policy); diags.HasErrors() {
			return "", nil, fmt.Errorf("policy: %s", diags.Error())
		}
	}
	if a, ok := content.Attributes["capabilities"]; ok {
		if diags := gohcl.DecodeExpression(a.Expr, nil, &caps); diags.HasErrors() {
			return "", nil, fmt.Errorf("capabilities: %s", diags.Error())
		}
	}
	return policy, caps, nil
}

func decodeLevel(b *hcl.Block) (string, error) {
	content, diags := b.Body.Content(levelSchema)
	if diags.HasErrors() {
		return "", unknownOrError(diags)
	}
	policy, _, err := decodeAttrs(content)
	if err != nil {
		return "", fmt.Errorf("%s: %w", b.Type, err)
	}
	return policy, nil
}

// unknownOrError turns a schema error into an error; a block Nomad has
// and Drover does not is named as unsupported.
func unknownOrError(diags hcl.Diagnostics) error {
	for _, d := range diags {
		for block, what := range unsupportedBlocks {
			if d.Detail != "" && strings.Contains(d.Detail, fmt.Sprintf("%q", block)) {
				return fmt.Errorf("%s: Drover does not support %s", d.Subject, what)
			}
		}
	}
	return fmt.Errorf("Failed to parse ACL policy: %s", diags.Error())
}

// isPolicyValid reports whether level is deny, read or write.
func isPolicyValid(level string) bool {
	return level == PolicyDeny || level == PolicyRead || level == PolicyWrite
}

func expandNamespacePolicy(level string) []string {
	switch level {
	case PolicyDeny:
		return []string{NamespaceCapabilityDeny}
	case PolicyRead:
		return namespaceRead
	case PolicyWrite:
		return namespaceWrite
	case PolicyScale:
		return namespaceScale
	}
	return nil
}

func expandHostVolumePolicy(level string) []string {
	switch level {
	case PolicyDeny:
		return []string{HostVolumeCapabilityDeny}
	case PolicyRead:
		return []string{HostVolumeCapabilityMountReadOnly}
	case PolicyWrite:
		return []string{HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite}
	}
	return nil
}

func expandNodePoolPolicy(level string) []string {
	switch level {
	case PolicyDeny:
		return []string{NodePoolCapabilityDeny}
	case PolicyRead:
		return []string{NodePoolCapabilityRead}
	case PolicyWrite:
		return []string{NodePoolCapabilityDelete, NodePoolCapabilityRead, NodePoolCapabilityWrite}
	}
	return nil
}

package structs

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Built-in node pools (Nomad's names). Every node is in "all"; a node or
// job that names no pool is in "default". Neither can be changed or
// deleted.
const (
	NodePoolAll     = "all"
	NodePoolDefault = "default"
)

// maxNodePoolDescription bounds a pool's description (as Nomad).
const maxNodePoolDescription = 256

// validNodePoolName is Nomad's rule for pool names.
var validNodePoolName = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)

// NodePool is a named set of nodes: a node joins the pool its client
// configuration names (node_pool), and a job places only on the nodes of
// its pool ("all": every node). Replicated; in Nomad's shape.
type NodePool struct {
	Name        string
	Description string
	Meta        map[string]string
	// SchedulerConfiguration is Nomad Enterprise's per-pool override;
	// Drover refuses it (see Validate).
	SchedulerConfiguration *NodePoolSchedulerConfiguration
	CreateIndex            uint64
	ModifyIndex            uint64
}

// NodePoolSchedulerConfiguration is Nomad's per-pool scheduler override.
type NodePoolSchedulerConfiguration struct {
	SchedulerAlgorithm            SchedulerAlgorithm
	MemoryOversubscriptionEnabled *bool
}

// IsBuiltInNodePool reports whether name is one of the built-in pools.
func IsBuiltInNodePool(name string) bool { return name == NodePoolAll || name == NodePoolDefault }

// BuiltInNodePools returns the built-in pools, as the state answers them.
func BuiltInNodePools() []*NodePool {
	return []*NodePool{
		{Name: NodePoolAll, Description: "Node pool with all nodes in the cluster."},
		{Name: NodePoolDefault, Description: "Default node pool."},
	}
}

// Validate checks a pool an operator writes: a valid name other than a
// built-in one, a short description, valid meta, and no scheduler
// configuration.
func (p *NodePool) Validate() error {
	v := &validator{}
	switch {
	case !validNodePoolName.MatchString(p.Name):
		v.add("Name", "invalid node pool name %q: 1 to 128 letters, digits, '-' and '_'", p.Name)
	case IsBuiltInNodePool(p.Name):
		v.add("Name", "node pool %q is built in and cannot be changed", p.Name)
	}
	if len(p.Description) > maxNodePoolDescription {
		v.add("Description", "at most %d characters; got %d", maxNodePoolDescription, len(p.Description))
	}
	validateMeta(v, "Meta", p.Meta)
	if p.SchedulerConfiguration != nil {
		v.add("SchedulerConfiguration", "Drover does not support a scheduler configuration per node pool (Nomad Enterprise)")
	}
	return v.err()
}

// Copy returns a copy that shares nothing with p.
func (p *NodePool) Copy() *NodePool {
	c := *p
	c.Meta = maps.Clone(p.Meta)
	if p.SchedulerConfiguration != nil {
		sc := *p.SchedulerConfiguration
		c.SchedulerConfiguration = &sc
	}
	return &c
}

// InNodePool reports whether a node in nodePool serves a job of jobPool.
func InNodePool(jobPool, nodePool string) bool {
	return jobPool == NodePoolAll || jobPool == nodePool || (jobPool == "" && nodePool == NodePoolDefault)
}

// NodePoolUpsertRequest creates or replaces pools.
type NodePoolUpsertRequest struct {
	NodePools []*NodePool
	WriteRequest
}

// NodePoolDeleteRequest deletes pools by name.
type NodePoolDeleteRequest struct {
	Names []string
	WriteRequest
}

// NodePoolSpecificRequest names one pool (and, for its nodes or jobs, the
// list options).
type NodePoolSpecificRequest struct {
	Name string
	QueryOptions
}

// NodePoolListResponse lists pools, sorted by name.
type NodePoolListResponse struct {
	NodePools []*NodePool
	QueryMeta
}

// SingleNodePoolResponse is one pool, nil when it does not exist.
type SingleNodePoolResponse struct {
	NodePool *NodePool
	QueryMeta
}

// NodePoolNodesResponse lists a pool's nodes.
type NodePoolNodesResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}

// NodePoolJobsResponse lists the jobs of a pool.
type NodePoolJobsResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// SortNodePools sorts pools by name.
func SortNodePools(pools []*NodePool) {
	slices.SortFunc(pools, func(a, b *NodePool) int { return strings.Compare(a.Name, b.Name) })
}

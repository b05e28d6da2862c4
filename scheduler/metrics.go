package scheduler

import (
	"maps"

	"github.com/drover-project/drover/structs"
)

// Filter reasons that are not constraints.
const (
	reasonMissingDrivers = "missing drivers"
)

// Exhausted dimensions, as structs.ComparableResources.Superset names them.
var dimensions = [...]string{"cpu", "memory", "disk"}

// placementMetrics counts what happened during one Select. It is reset
// (not reallocated) before every Select, so the hot loop does not allocate
// once its maps have grown; it becomes a structs.AllocMetric only when an
// allocation or a failure needs one.
type placementMetrics struct {
	evaluated  int
	filtered   int
	exhausted  int
	constraint map[string]int // filter reason -> nodes
	class      map[string]int // node class -> nodes filtered
	classExh   map[string]int // node class -> nodes exhausted
	dimension  [len(dimensions)]int
	other      map[string]int // any other dimension ("network: ...") -> nodes; nil until one
}

func (m *placementMetrics) init() {
	m.constraint = map[string]int{}
	m.class = map[string]int{}
	m.classExh = map[string]int{}
}

func (m *placementMetrics) reset() {
	m.evaluated, m.filtered, m.exhausted = 0, 0, 0
	clear(m.constraint)
	clear(m.class)
	clear(m.classExh)
	clear(m.other)
	m.dimension = [len(dimensions)]int{}
}

// filter records that n failed a check named reason.
func (m *placementMetrics) filter(n *nodeInfo, reason string) {
	m.filtered++
	m.constraint[reason]++
	if c := n.node.NodeClass; c != "" {
		m.class[c]++
	}
}

// exhaust records that n lacked room in dimension dim.
func (m *placementMetrics) exhaust(n *nodeInfo, dim string) {
	m.exhausted++
	known := false
	for i, d := range dimensions {
		if d == dim {
			m.dimension[i]++
			known = true
		}
	}
	if !known {
		if m.other == nil { // made only when a port is short
			m.other = map[string]int{}
		}
		m.other[dim]++
	}
	if c := n.node.NodeClass; c != "" {
		m.classExh[c]++
	}
}

// merge adds o's counts to m.
func (m *placementMetrics) merge(o *placementMetrics) {
	m.evaluated += o.evaluated
	m.filtered += o.filtered
	m.exhausted += o.exhausted
	for k, v := range o.constraint {
		m.constraint[k] += v
	}
	for k, v := range o.class {
		m.class[k] += v
	}
	for k, v := range o.classExh {
		m.classExh[k] += v
	}
	for i, v := range o.dimension {
		m.dimension[i] += v
	}
	for k, v := range o.other {
		if m.other == nil {
			m.other = map[string]int{}
		}
		m.other[k] += v
	}
}

// allocMetric renders the counters. nodesAvailable (ready nodes per
// datacenter) is copied.
func (m *placementMetrics) allocMetric(nodesAvailable map[string]int, inPool int) *structs.AllocMetric {
	out := &structs.AllocMetric{
		NodesEvaluated: m.evaluated, NodesFiltered: m.filtered,
		NodesExhausted: m.exhausted, NodesInPool: inPool,
		NodesAvailable: maps.Clone(nodesAvailable),
	}
	if len(m.constraint) > 0 {
		out.ConstraintFiltered = maps.Clone(m.constraint)
	}
	if len(m.class) > 0 {
		out.ClassFiltered = maps.Clone(m.class)
	}
	if len(m.classExh) > 0 {
		out.ClassExhausted = maps.Clone(m.classExh)
	}
	for i, n := range m.dimension {
		if n > 0 {
			if out.DimensionExhausted == nil {
				out.DimensionExhausted = map[string]int{}
			}
			out.DimensionExhausted[dimensions[i]] = n
		}
	}
	for dim, n := range m.other {
		if out.DimensionExhausted == nil {
			out.DimensionExhausted = map[string]int{}
		}
		out.DimensionExhausted[dim] = n
	}
	return out
}

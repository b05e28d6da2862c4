package scheduler

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// nodeInfo is one evaluation's view of one node, created the first time
// the evaluation touches the node. Its usage is read from the state once,
// the first time a placement looks at the node; what the plan stops and
// places on it is tracked from the start.
type nodeInfo struct {
	node *structs.Node
	// idx numbers the evaluation's nodeInfos densely, in the order they
	// were created; per-node tables (groupCounts, check verdicts) are
	// indexed by it, so they grow with the nodes the evaluation touches.
	idx int

	loaded   bool                        // capacity is set and used includes the state's usage
	capacity structs.ComparableResources // total minus reserved
	// used is what the plan changes on the node (negative for stops) and,
	// once loaded, plus what its live allocations in the state use.
	used structs.ComparableResources
	// ports are the ports taken on the node, built the first time a group
	// asking for ports examines it (loadPorts) and kept current by the
	// plan from then on; nil until then.
	ports *structs.PortUsage
}

// evalContext is the state of one scheduling attempt: the snapshot, the
// plan being built, and every per-evaluation cache. It is single-threaded.
//
// Its setup costs O(1) in the number of nodes: the nodes come from the
// state's shared NodeView, and a node gets a nodeInfo only when the
// evaluation first touches it (a candidate drawn for placement, a node
// holding one of the job's allocations).
type evalContext struct {
	state  State
	logger hclog.Logger
	eval   *structs.Evaluation
	job    *structs.Job // nil when the job was purged
	now    time.Time
	plan   *structs.Plan
	rng    *rand.Rand

	// fitScore scores a node for the scheduler configuration's algorithm;
	// preempt says whether the configuration lets the job's type preempt.
	fitScore func(capacity, used, ask structs.ComparableResources) float64
	preempt  bool

	view  *state.NodeView     // every node in the snapshot; shared, read-only
	infos map[int32]*nodeInfo // by position in view, created on first use
	slab  []nodeInfo          // storage for the next nodeInfos
	// portSlab is storage for the next nodes' port sets (loadPorts).
	portSlab []structs.PortUsage

	groupIdx    map[string]int // job task group name -> index
	groupCounts []int32        // [node.idx*len(groups)+group]: live allocs of this job, plan included (see initJobAllocs)

	// stopped holds the IDs of live allocations the plan stops, so that a
	// second stop of the same allocation frees nothing.
	stopped map[string]struct{}

	properties []*propertySet // distinct_property trackers, kept current with the plan
	// spreads are each group's spread sets (spread.go), kept current with
	// the plan; nil when the job has no spreads.
	spreads  [][]*spreadSet
	compiled *compileCache
	metrics  placementMetrics

	// err is the first state read error met inside an iterator (iterators
	// cannot return errors); the attempt fails with it.
	err error
}

// evalSeed derives the evaluation's random seed from its ID, so that the
// same evaluation over the same state always makes the same choices.
func evalSeed(evalID string) (uint64, uint64) {
	h := fnv.New64a()
	h.Write([]byte(evalID))
	a := h.Sum64()
	h.Write([]byte{0xff})
	return a, h.Sum64()
}

// newEvalContext takes the snapshot's node view and prepares an empty
// plan. job may be nil.
func newEvalContext(st State, logger hclog.Logger, eval *structs.Evaluation, job *structs.Job, now time.Time) (*evalContext, error) {
	view, err := st.NodeView()
	if err != nil {
		return nil, err
	}
	index, err := st.LatestIndex()
	if err != nil {
		return nil, err
	}
	_, config, err := st.SchedulerConfig(nil)
	if err != nil {
		return nil, err
	}
	s1, s2 := evalSeed(eval.ID)
	c := &evalContext{
		state: st, logger: logger, eval: eval, job: job, now: now,
		rng:      rand.New(rand.NewPCG(s1, s2)),
		view:     view,
		infos:    map[int32]*nodeInfo{},
		groupIdx: map[string]int{},
		stopped:  map[string]struct{}{},
		compiled: newCompileCache(),
		fitScore: fitScore,
		plan: &structs.Plan{EvalID: eval.ID, Priority: eval.Priority, Job: job,
			NodeUpdate: map[string][]*structs.Allocation{}, NodeAllocation: map[string][]*structs.Allocation{},
			SnapshotIndex: index},
	}
	if config.EffectiveAlgorithm() == structs.SchedulerAlgorithmSpread {
		c.fitScore = spreadScore
	}
	if job != nil {
		c.preempt = config.PreemptionEnabled(job.Type)
		c.plan.AllAtOnce = job.AllAtOnce
		for i, tg := range job.TaskGroups {
			c.groupIdx[tg.Name] = i
		}
	}
	c.metrics.init()
	return c, nil
}

// info returns the nodeInfo of the node at position pos of the view,
// creating it on first use.
func (c *evalContext) info(pos int32) *nodeInfo {
	if n, ok := c.infos[pos]; ok {
		return n
	}
	if len(c.slab) == 0 {
		c.slab = make([]nodeInfo, min(max(16, len(c.infos)), 1024))
	}
	n := &c.slab[0]
	c.slab = c.slab[1:]
	*n = nodeInfo{node: c.view.Node(int(pos)), idx: len(c.infos)}
	c.infos[pos] = n
	c.groupCounts = append(c.groupCounts, make([]int32, len(c.groupIdx))...)
	return n
}

// node returns the node with the given ID, or nil when it is gone.
func (c *evalContext) node(id string) *nodeInfo {
	pos, ok := c.view.Position(id)
	if !ok {
		return nil
	}
	return c.info(int32(pos))
}

// initJobAllocs counts the job's live allocations per node and group and
// builds the distinct_property sets from them. allocs are the job's
// allocations from the same state; call it once, before the plan changes
// anything.
func (c *evalContext) initJobAllocs(allocs []*structs.Allocation) {
	for _, a := range allocs {
		g, own := c.ownGroup(a)
		if !own || a.TerminalStatus() {
			continue
		}
		n := c.node(a.NodeID)
		if n == nil {
			continue
		}
		c.groupCounts[n.idx*len(c.groupIdx)+g]++
	}
	c.initProperties(allocs)
	c.initSpreads(allocs)
}

// load reads n's capacity and usage on first use, in O(1): the state
// keeps each node's usage, and used already holds what the plan stopped on
// the node before. On a state error it records the error and leaves the
// node looking full.
func (c *evalContext) load(n *nodeInfo) {
	if n.loaded {
		return
	}
	n.loaded = true
	n.capacity = nodeCapacity(n.node)
	u, err := c.state.NodeUsage(nil, n.node.ID)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		n.used = n.capacity
		return
	}
	n.used.Add(u.Used)
}

// ownGroup returns the group index of a when it belongs to the job.
func (c *evalContext) ownGroup(a *structs.Allocation) (int, bool) {
	if c.job == nil || a.JobID != c.job.ID || a.Namespace != c.job.Namespace {
		return 0, false
	}
	g, ok := c.groupIdx[a.TaskGroup]
	return g, ok
}

// groupCount is the number of live allocations of group g (or, with g < 0,
// of the whole job) on n, plan included.
func (c *evalContext) groupCount(n *nodeInfo, g int) int {
	ng := len(c.groupIdx)
	base := n.idx * ng
	if g >= 0 {
		return int(c.groupCounts[base+g])
	}
	total := 0
	for i := 0; i < ng; i++ {
		total += int(c.groupCounts[base+i])
	}
	return total
}

// nodeCapacity is what a node offers the scheduler.
func nodeCapacity(n *structs.Node) structs.ComparableResources {
	var c structs.ComparableResources
	if r := n.NodeResources; r != nil {
		c.CPU, c.MemoryMB, c.DiskMB = r.Cpu.CpuShares, r.Memory.MemoryMB, r.Disk.DiskMB
	}
	if r := n.ReservedResources; r != nil {
		c.CPU -= r.Cpu.CpuShares
		c.MemoryMB -= r.Memory.MemoryMB
		c.DiskMB -= r.Disk.DiskMB
	}
	return c
}

// appendStop adds a stop of a (as read from the state) to the plan and
// frees what it used. It returns the plan's copy of the stop.
func (c *evalContext) appendStop(a *structs.Allocation, desc, clientStatus string) *structs.Allocation {
	stopped := c.plan.AppendStoppedAlloc(a, desc, clientStatus)
	if a.TerminalStatus() {
		return stopped // it held nothing
	}
	if _, dup := c.stopped[a.ID]; dup {
		return stopped
	}
	c.stopped[a.ID] = struct{}{}
	n := c.node(a.NodeID)
	if n == nil {
		return stopped
	}
	g, own := c.ownGroup(a)
	if own {
		for _, ps := range c.properties {
			ps.remove(n, g)
		}
		c.countSpread(n, g, -1)
		c.groupCounts[n.idx*len(c.groupIdx)+g]--
	}
	n.used.Subtract(a.AllocatedResources.Comparable())
	if n.ports != nil {
		n.ports.Remove(a)
	}
	return stopped
}

// revertStop withdraws the stop of a that appendStop just added.
func (c *evalContext) revertStop(a *structs.Allocation) {
	list := c.plan.NodeUpdate[a.NodeID]
	if n := len(list); n > 0 && list[n-1].ID == a.ID {
		if n == 1 {
			delete(c.plan.NodeUpdate, a.NodeID)
		} else {
			c.plan.NodeUpdate[a.NodeID] = list[:n-1]
		}
	}
	if _, ok := c.stopped[a.ID]; !ok {
		return // it held nothing
	}
	delete(c.stopped, a.ID)
	n := c.node(a.NodeID)
	if n == nil {
		return
	}
	g, own := c.ownGroup(a)
	if own {
		for _, ps := range c.properties {
			ps.add(n, g)
		}
		c.countSpread(n, g, 1)
		c.groupCounts[n.idx*len(c.groupIdx)+g]++
	}
	n.used.Add(a.AllocatedResources.Comparable())
	if n.ports != nil {
		n.ports.Add(a)
	}
}

// appendPlace adds a new allocation of group g on n using ask.
func (c *evalContext) appendPlace(a *structs.Allocation, n *nodeInfo, g int, ask structs.ComparableResources) {
	c.plan.AppendAlloc(a)
	c.load(n)
	n.used.Add(ask)
	if n.ports != nil {
		n.ports.Add(a)
	}
	c.groupCounts[n.idx*len(c.groupIdx)+g]++
	for _, ps := range c.properties {
		ps.add(n, g)
	}
	c.countSpread(n, g, 1)
}

// appendUpdate adds an in-place or attribute update of an existing
// allocation; it changes no usage.
func (c *evalContext) appendUpdate(a *structs.Allocation) { c.plan.AppendAlloc(a) }

// sortedKeys returns the keys of m in order (for deterministic loops).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

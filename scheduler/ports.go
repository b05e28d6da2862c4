package scheduler

import (
	"math/rand/v2"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// Ports are a resource like CPU and memory, with one difference: each is
// a distinct value on a host address, so a node's free ports cannot be
// summed. A group that asks for ports gets two more stages in its chain: a
// check that the node has every host network the ports name, and, after
// bin packing, a stage that picks the ports on the node (portIterator).
// The set of ports taken on a node (structs.PortUsage) is built only for
// nodes such a group examines, from the node's live allocations and the
// plan, and kept current by the plan from then on; groups without ports
// never build one.

// maxRandomPortTries is how many random dynamic ports are tried before a
// linear scan of the range (Nomad's bound).
const maxRandomPortTries = 20

// portAsk is the ports one allocation of a group needs: its network
// block's and its tasks' legacy ones.
type portAsk struct {
	group *structs.NetworkResource // nil when the group has none with ports
	tasks []taskNetwork
	// aliases are the host networks the ports name, each once, with the
	// first port naming it (for the filter reason).
	aliases [][2]string
	all     []*structs.NetworkResource // nets(), built on first use
}

type taskNetwork struct {
	task string
	net  *structs.NetworkResource
}

// newPortAsk returns tg's port ask, or nil when it asks for no port.
func newPortAsk(tg *structs.TaskGroup) *portAsk {
	if !tg.HasPorts() {
		return nil
	}
	a := &portAsk{}
	for _, n := range tg.Networks {
		if n != nil && len(n.ReservedPorts)+len(n.DynamicPorts) > 0 {
			a.group = n
			a.noteAliases(n)
			break // validation allows one
		}
	}
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		for _, n := range t.Resources.Networks {
			if n != nil && len(n.ReservedPorts)+len(n.DynamicPorts) > 0 {
				a.tasks = append(a.tasks, taskNetwork{task: t.Name, net: n})
				a.noteAliases(n)
			}
		}
	}
	return a
}

func (a *portAsk) noteAliases(n *structs.NetworkResource) {
	for _, list := range [][]structs.Port{n.ReservedPorts, n.DynamicPorts} {
		for _, p := range list {
			alias, known := p.PortHostNetwork(), false
			for _, x := range a.aliases {
				known = known || x[0] == alias
			}
			if !known {
				a.aliases = append(a.aliases, [2]string{alias, p.Label})
			}
		}
	}
}

// hostNetworkCheck filters nodes without one host network a port names,
// with Nomad's reason.
type hostNetworkCheck struct{ alias, label string }

func (c hostNetworkCheck) feasible(n *structs.Node) bool {
	_, _, ok := n.HostNetworkAddress(c.alias)
	return ok
}

func (c hostNetworkCheck) reasonText() string {
	return "missing host network " + strconv.Quote(c.alias) + " for port " + strconv.Quote(c.label)
}

func (c hostNetworkCheck) escapesClass() bool { return true } // networks are not in the computed class

// portOffer is the ports a node gives one allocation, in the allocation's
// shapes.
type portOffer struct {
	shared   []structs.AllocatedPortMapping
	networks []*structs.NetworkResource
	tasks    map[string][]*structs.NetworkResource
}

// portPicker picks one allocation's ports on one node.
type portPicker struct {
	used   *structs.PortUsage
	rng    *rand.Rand
	lo, hi int
	taken  []structs.PortKey // picked so far for this allocation
}

func (p *portPicker) free(addr string, port int) bool {
	if p.used.InUse(addr, port) {
		return false
	}
	for _, k := range p.taken {
		if k.Addr == addr && k.Port == port {
			return false
		}
	}
	return true
}

// assign gives every port of a a value on the node of used, statics first, or returns
// the reason it cannot (an exhausted dimension, as Nomad names it).
func (a *portAsk) assign(used *structs.PortUsage, rng *rand.Rand) (*portOffer, string) {
	p := &portPicker{used: used, rng: rng}
	p.lo, p.hi = used.DynamicRange()
	offer := &portOffer{}
	var nets []*structs.NetworkResource // granted copies: group first, then tasks
	if a.group != nil {
		nets = append(nets, a.group.Copy())
	}
	for _, t := range a.tasks {
		nets = append(nets, t.net.Copy())
	}
	for _, static := range []bool{true, false} {
		for _, g := range nets {
			if reason := p.fill(g, static); reason != "" {
				return nil, reason
			}
		}
	}
	i := 0
	if a.group != nil {
		offer.networks = nets[:1]
		for _, list := range [][]structs.Port{nets[0].ReservedPorts, nets[0].DynamicPorts} {
			for _, port := range list {
				addr, _, _ := used.Address(port.PortHostNetwork())
				offer.shared = append(offer.shared, structs.AllocatedPortMapping{Label: port.Label, Value: port.Value, To: port.To, HostIP: addr})
			}
		}
		i = 1
	}
	for j, t := range a.tasks {
		if offer.tasks == nil {
			offer.tasks = map[string][]*structs.NetworkResource{}
		}
		offer.tasks[t.task] = append(offer.tasks[t.task], nets[i+j])
	}
	return offer, ""
}

// fill sets the values of g's static (or dynamic) ports and the
// network's address and device (those of its first port's host network).
func (p *portPicker) fill(g *structs.NetworkResource, static bool) string {
	list := g.DynamicPorts
	if static {
		list = g.ReservedPorts
	}
	for i := range list {
		port := &list[i]
		alias := port.PortHostNetwork()
		addr, device, ok := p.used.Address(alias)
		if !ok {
			return "network: no addresses available for " + strconv.Quote(alias) + " network"
		}
		if g.IP == "" {
			g.IP, g.Device = addr, device
		}
		if static {
			if !p.free(addr, port.Value) {
				return "network: reserved port collision " + port.Label + "=" + strconv.Itoa(port.Value)
			}
		} else if port.Value = p.dynamic(addr); port.Value == 0 {
			return "network: dynamic port selection failed"
		}
		if port.To == -1 {
			port.To = port.Value
		}
		p.taken = append(p.taken, structs.PortKey{Addr: addr, Port: port.Value})
	}
	return ""
}

// dynamic picks a free port in the node's range on addr: a few random
// tries, then a scan; 0 when none is free.
func (p *portPicker) dynamic(addr string) int {
	if p.hi < p.lo {
		return 0
	}
	for i := 0; i < maxRandomPortTries && p.rng != nil; i++ {
		if v := p.lo + p.rng.IntN(p.hi-p.lo+1); p.free(addr, v) {
			return v
		}
	}
	for v := p.lo; v <= p.hi; v++ {
		if p.free(addr, v) {
			return v
		}
	}
	return 0
}

// fits reports whether every port of a can be given on the node of used, or the reason
// it cannot, without picking any: each static port is free, and each
// address has at least as many free ports in the dynamic range as the
// dynamic ports asking for it (less the static ones taken from the range
// on it). It is exact, so assign on a node that fits cannot fail; and it
// does not allocate.
func (a *portAsk) fits(used *structs.PortUsage) string {
	lo, hi := used.DynamicRange()
	var need [4]struct { // per address: dynamic ports asked, minus statics in range
		addr string
		n    int
	}
	var extra int // dynamic asks beyond the fixed table (rare): checked one by one
	count := func(addr string, d int) {
		for i := range need {
			if need[i].addr == addr || need[i].addr == "" {
				need[i].addr = addr
				need[i].n += d
				return
			}
		}
		extra++
	}
	nets := a.nets()
	for _, g := range nets {
		for i, port := range g.ReservedPorts {
			addr, _, ok := used.Address(port.PortHostNetwork())
			if !ok {
				return "network: no addresses available for " + strconv.Quote(port.PortHostNetwork()) + " network"
			}
			if used.InUse(addr, port.Value) || dupStatic(nets, g, i, addr, used) {
				return "network: reserved port collision " + port.Label + "=" + strconv.Itoa(port.Value)
			}
			if port.Value >= lo && port.Value <= hi {
				count(addr, 1)
			}
		}
	}
	for _, g := range nets {
		for _, port := range g.DynamicPorts {
			addr, _, ok := used.Address(port.PortHostNetwork())
			if !ok {
				return "network: no addresses available for " + strconv.Quote(port.PortHostNetwork()) + " network"
			}
			count(addr, 1)
		}
	}
	for _, x := range need {
		if x.addr != "" && x.n > used.FreeDynamic(x.addr) {
			return "network: dynamic port selection failed"
		}
	}
	if extra > 0 { // more than four addresses: fall back to picking
		if _, reason := a.assign(used, nil); reason != "" {
			return reason
		}
	}
	return ""
}

// nets lists the ask's networks: the group's first, then the tasks'.
func (a *portAsk) nets() []*structs.NetworkResource {
	if a.all == nil {
		if a.group != nil {
			a.all = append(a.all, a.group)
		}
		for _, t := range a.tasks {
			a.all = append(a.all, t.net)
		}
	}
	return a.all
}

// dupStatic reports whether a static port before g.ReservedPorts[i] (in
// nets order) has the same value on the same address.
func dupStatic(nets []*structs.NetworkResource, g *structs.NetworkResource, i int, addr string, used *structs.PortUsage) bool {
	want := g.ReservedPorts[i].Value
	for _, h := range nets {
		for j, p := range h.ReservedPorts {
			if h == g && j == i {
				return false
			}
			if p.Value == want {
				if other, _, _ := used.Address(p.PortHostNetwork()); other == addr {
					return true
				}
			}
		}
	}
	return false
}

// portIterator passes over ranked nodes where the group's ports cannot be
// given. It only checks (fits); the ports are picked once a node is
// chosen (stack.Select), so the nodes ranked and not chosen cost no
// allocation.
type portIterator struct {
	src rankIterator
	ctx *evalContext
	rej rejecter
	ask *portAsk
}

func (it *portIterator) Next() (rankedNode, bool) {
	for r, ok := it.src.Next(); ok; r, ok = it.src.Next() {
		if dim := it.ask.fits(it.ctx.loadPorts(r.node)); dim != "" {
			it.rej.exhaust(r.node, dim)
			continue
		}
		return r, true
	}
	return rankedNode{}, false
}

func (it *portIterator) Reset() { it.src.Reset() }

// loadPorts returns the ports taken on n, building the set on first use
// from what n's live allocations hold in the state, less those the plan
// stops or updates, plus the plan's placements on n. The state's ports
// are shared, not copied: a node examined and not chosen costs a lookup
// and a pass over its holders only when the plan touches it.
func (c *evalContext) loadPorts(n *nodeInfo) *structs.PortUsage {
	if n.ports != nil {
		return n.ports
	}
	held, err := c.state.NodePorts(nil, n.node.ID)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		held = nil
	}
	if len(c.portSlab) == 0 {
		c.portSlab = make([]structs.PortUsage, min(max(16, len(c.infos)), 1024))
	}
	u := &c.portSlab[0]
	c.portSlab = c.portSlab[1:]
	u.Init(n.node, held)
	n.ports = u
	planned := c.plan.NodeAllocation[n.node.ID]
	if held != nil && (len(planned) > 0 || len(c.stopped) > 0) {
		var plannedIDs map[string]struct{} // for a long list; else a scan
		if len(planned) > 8 {
			plannedIDs = make(map[string]struct{}, len(planned))
			for _, a := range planned {
				plannedIDs[a.ID] = struct{}{}
			}
		}
		for _, h := range held.Holders {
			_, stopped := c.stopped[h.AllocID]
			if stopped || inPlan(planned, plannedIDs, h.AllocID) {
				u.RemoveKeys(h.Ports)
			}
		}
	}
	for _, a := range planned {
		if !a.TerminalStatus() {
			u.Add(a)
		}
	}
	return u
}

func inPlan(list []*structs.Allocation, ids map[string]struct{}, id string) bool {
	if ids != nil {
		_, ok := ids[id]
		return ok
	}
	for _, a := range list {
		if a.ID == id {
			return true
		}
	}
	return false
}

// apply records the offer on the allocation's resources.
func (o *portOffer) apply(ar *structs.AllocatedResources) {
	if o == nil {
		return
	}
	ar.Shared.Ports = o.shared
	ar.Shared.Networks = o.networks
	for task, nets := range o.tasks {
		if tr := ar.Tasks[task]; tr != nil {
			tr.Networks = nets
		}
	}
}

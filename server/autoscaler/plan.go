package autoscaler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
)

// Ask is the resources one queued allocation needs.
type Ask struct {
	CPU, MemoryMB int
}

// NodeView is what the plan needs of an instance's node.
type NodeView struct {
	Node *structs.Node
	// Allocs counts its live (non-terminal) allocations.
	Allocs int
	// FreeCPU and FreeMemoryMB are what it can still place.
	FreeCPU, FreeMemoryMB int
}

// PoolView is one pool as a pass sees it.
type PoolView struct {
	Config    *structs.PoolAutoscaler
	Instances []*structs.PoolInstance
	// Nodes are the pool's nodes by the instance ID in their meta.
	Nodes map[string]*NodeView
	// QuotaBackoffUntil is the end of a quota back-off (zero: none).
	QuotaBackoffUntil time.Time
	// Asks are the queued allocations of the pool blocked on capacity.
	Asks []Ask
}

// Decision is what one pass decided for a pool.
type Decision struct {
	// Create are new instances (state booting) to record, then create.
	Create []*structs.PoolInstance
	// Update are instances whose state changed (record only).
	Update []*structs.PoolInstance
	// Destroy are instances to destroy at the provider (state
	// shutting-down; recorded with Update when the state changed).
	Destroy []*structs.PoolInstance
	// Remove are gone instances old enough to forget.
	Remove []string
	// Events explain Create and Update.
	Events []*structs.PoolEvent
	// Notes explain why nothing (more) was created; the loop records a
	// note only when it differs from the pool's last one.
	Notes []*structs.PoolEvent
	// Ineligible and Eligible are nodes to mark so (hold, and back to
	// run); Drain are nodes to drain.
	Ineligible, Eligible, Drain []string
	// Booted are the boot times of instances booted in this pass.
	Booted []time.Duration
	// Wake is when the plan's next timer is due (zero: none).
	Wake time.Time
}

// GoneRetention is how long a gone instance is kept (for its events and
// the create throttle) before it is removed.
const GoneRetention = 10 * time.Minute

// Plan decides, for one pool at now, what the autoscaler does. It is a
// pure function of v and now; newID names new instances.
func Plan(v *PoolView, now time.Time, newID func() string) *Decision {
	c := v.Config
	d := &Decision{}
	nowNs := now.UnixNano()
	ev := func(typ, id, format string, args ...any) *structs.PoolEvent {
		return &structs.PoolEvent{Pool: c.Pool, Time: nowNs, Type: typ, InstanceID: id, Message: fmt.Sprintf(format, args...)}
	}
	wake := func(t time.Time) {
		if d.Wake.IsZero() || t.Before(d.Wake) {
			d.Wake = t
		}
	}
	active := 0 // instances not gone and not shutting down
	booting := 0
	createdInWindow := 0
	for _, in := range v.Instances {
		if in.CreateTime > now.Add(-c.CreateInterval).UnixNano() {
			createdInWindow++
		}
		if in.State != structs.InstanceGone && in.State != structs.InstanceShuttingDown {
			active++
		}
	}
	// bins are the capacity on the way: booting instances' types and the
	// free room of running instances' nodes that take work.
	var bins []Ask
	destroy := func(in *structs.PoolInstance, typ, reason string) {
		u := in.Copy()
		u.State, u.StateReason = structs.InstanceShuttingDown, reason
		d.Update = append(d.Update, u)
		d.Destroy = append(d.Destroy, u)
		d.Events = append(d.Events, ev(typ, in.ID, "%s", reason))
		active--
	}
	for _, in := range v.Instances {
		node := v.Nodes[in.ID]
		switch in.State {
		case structs.InstanceGone:
			if gone := time.Unix(0, in.GoneTime); in.GoneTime == 0 || !now.Before(gone.Add(max(GoneRetention, c.CreateInterval))) {
				d.Remove = append(d.Remove, in.ID)
			} else {
				wake(gone.Add(max(GoneRetention, c.CreateInterval)))
			}
			continue
		case structs.InstanceShuttingDown:
			d.Destroy = append(d.Destroy, in)
			continue
		case structs.InstanceBooting:
			if node != nil && bootedNode(node.Node) {
				u := in.Copy()
				u.State, u.NodeID, u.BootTime, u.StateReason = structs.InstanceRunning, node.Node.ID, nowNs, ""
				took := now.Sub(time.Unix(0, in.CreateTime))
				d.Booted = append(d.Booted, took)
				d.Update = append(d.Update, u)
				d.Events = append(d.Events, ev(structs.PoolEventBooted, in.ID, "node %s registered ready with healthy drivers after %s", node.Node.ID, took.Round(time.Millisecond)))
				in = u
				break // go on as running
			}
			deadline := time.Unix(0, in.CreateTime).Add(c.BootTimeout)
			if !now.Before(deadline) {
				destroy(in, structs.PoolEventDestroy, fmt.Sprintf("boot timeout: no ready node with healthy drivers within %s", c.BootTimeout))
				continue
			}
			wake(deadline)
			booting++
			if t := c.InstanceType(in.Type); t != nil {
				bins = append(bins, Ask{t.CPU, t.MemoryMB})
			}
			continue
		}
		// Booted: running, idle or draining. A node that went down keeps
		// its instance (it may come back): its allocations are lost, so
		// it turns idle and goes at the idle timeout like any other.
		if node == nil {
			destroy(in, structs.PoolEventDestroy, "its node is gone from the state")
			continue
		}
		planBooted(c, v, in, node, now, d, ev, wake, &active, destroy, &bins)
	}

	if !c.Enabled {
		return d
	}
	// What the queue still needs once the capacity on the way is used.
	unmet, noFit := pack(v.Asks, bins, c.InstanceTypes)
	if noFit > 0 {
		d.Notes = append(d.Notes, ev(structs.PoolEventNoFit, "", "%d queued allocations fit no instance type", noFit))
	}
	var want []*structs.InstanceType
	var reason string
	if len(unmet) > 0 {
		want = chooseTypes(unmet, c.InstanceTypes)
		reason = fmt.Sprintf("%d queued allocations (%s) blocked on capacity", len(unmet), askSum(unmet))
	}
	if short := c.Min - active; short > len(want) {
		cheapest := slices.MinFunc(c.InstanceTypes, func(a, b *structs.InstanceType) int { return cmp.Compare(a.PricePerHour, b.PricePerHour) })
		for len(want) < short {
			want = append(want, cheapest)
		}
		reason = fmt.Sprintf("the pool has %d instances, below its minimum %d", active, c.Min)
	}
	if len(want) == 0 {
		return d
	}
	limit := len(want)
	var why []string
	cap := func(n int, format string, args ...any) {
		if n < limit {
			limit = max(n, 0)
			why = append(why, fmt.Sprintf(format, args...))
		}
	}
	if until := v.QuotaBackoffUntil; now.Before(until) {
		cap(0, "quota back-off until %s", until.UTC().Format(time.RFC3339))
		wake(until)
	}
	cap(c.Max-active, "maximum %d instances reached", c.Max)
	if c.MaxBooting > 0 {
		cap(c.MaxBooting-booting, "%d instances booting (at most %d)", booting, c.MaxBooting)
	}
	if c.MaxCreatesPerInterval > 0 {
		cap(c.MaxCreatesPerInterval-createdInWindow, "%d creates in the last %s (at most %d)", createdInWindow, c.CreateInterval, c.MaxCreatesPerInterval)
		if createdInWindow >= c.MaxCreatesPerInterval {
			wake(oldestCreateInWindow(v.Instances, now, c.CreateInterval).Add(c.CreateInterval))
		}
	}
	if limit < len(want) {
		d.Notes = append(d.Notes, ev(structs.PoolEventLimit, "", "%s; want %d more instances, creating %d: %s", reason, len(want), limit, strings.Join(why, "; ")))
	}
	for _, t := range want[:limit] {
		in := &structs.PoolInstance{ID: newID(), Pool: c.Pool, Type: t.Name, ProviderType: t.ProviderType, PricePerHour: t.PricePerHour,
			State: structs.InstanceBooting, Behavior: structs.InstanceBehaviorRun, CreateTime: nowNs}
		d.Create = append(d.Create, in)
		d.Events = append(d.Events, ev(structs.PoolEventCreate, in.ID, "%s: %s is the cheapest type that fits (%d of it, %.4g per hour each)", reason, t.Name, countType(want, t), t.PricePerHour))
		wake(now.Add(c.BootTimeout))
	}
	return d
}

// planBooted decides for a booted instance by its behaviour and its
// node's work.
func planBooted(c *structs.PoolAutoscaler, v *PoolView, in *structs.PoolInstance, node *NodeView, now time.Time, d *Decision,
	ev func(typ, id, format string, args ...any) *structs.PoolEvent, wake func(time.Time), active *int,
	destroy func(*structs.PoolInstance, string, string), bins *[]Ask) {
	n := node.Node
	up := !n.TerminalStatus()
	set := func(state string, idleSince int64) {
		if in.State == state && in.IdleSince == idleSince {
			return
		}
		u := in.Copy()
		u.State, u.IdleSince = state, idleSince
		d.Update = replaceUpdate(d.Update, u)
	}
	switch in.Behavior {
	case structs.InstanceBehaviorHold:
		if up && n.SchedulingEligibility == structs.NodeSchedulingEligible && n.DrainStrategy == nil {
			d.Ineligible = append(d.Ineligible, n.ID)
		}
		if node.Allocs > 0 {
			set(structs.InstanceRunning, 0)
		} else if in.IdleSince == 0 {
			set(structs.InstanceIdle, now.UnixNano())
		} else {
			set(structs.InstanceIdle, in.IdleSince)
		}
		return
	case structs.InstanceBehaviorDrain:
		if node.Allocs == 0 {
			destroy(in, structs.PoolEventDestroy, "drained: no allocations left")
			return
		}
		if up && n.DrainStrategy == nil && in.State != structs.InstanceDraining {
			d.Drain = append(d.Drain, n.ID)
			d.Events = append(d.Events, ev(structs.PoolEventDrain, in.ID, "behaviour drain: draining node %s (%d allocations)", n.ID, node.Allocs))
		}
		set(structs.InstanceDraining, 0)
		return
	}
	// run
	if up && n.SchedulingEligibility != structs.NodeSchedulingEligible && n.DrainStrategy == nil && !n.Drain {
		d.Eligible = append(d.Eligible, n.ID)
	}
	if n.Status == structs.NodeStatusReady && n.DrainStrategy == nil {
		*bins = append(*bins, Ask{node.FreeCPU, node.FreeMemoryMB})
	}
	if node.Allocs > 0 {
		set(structs.InstanceRunning, 0)
		return
	}
	since := in.IdleSince
	if since == 0 {
		since = now.UnixNano()
	}
	idleFor := now.Sub(time.Unix(0, since))
	if idleFor >= c.IdleTimeout && *active > c.Min && !anyFits(v.Asks, Ask{node.FreeCPU, node.FreeMemoryMB}) {
		destroy(in, structs.PoolEventDestroy, fmt.Sprintf("idle for %s (timeout %s)", idleFor.Round(time.Millisecond), c.IdleTimeout))
		return
	}
	set(structs.InstanceIdle, since)
	wake(time.Unix(0, since).Add(c.IdleTimeout))
}

// replaceUpdate puts u in list, replacing an earlier update of the same
// instance.
func replaceUpdate(list []*structs.PoolInstance, u *structs.PoolInstance) []*structs.PoolInstance {
	for i, o := range list {
		if o.ID == u.ID {
			list[i] = u
			return list
		}
	}
	return append(list, u)
}

// bootedNode is the boot probe: the node is ready and has at least one
// driver, every detected one healthy.
func bootedNode(n *structs.Node) bool {
	if n.Status != structs.NodeStatusReady {
		return false
	}
	healthy := 0
	for _, d := range n.Drivers {
		if d == nil || !d.Detected {
			continue
		}
		if !d.Healthy {
			return false
		}
		healthy++
	}
	return healthy > 0
}

// pack places asks, largest first, into the first bin with room; it
// returns the asks left over that fit some instance type, and how many
// fit none.
func pack(asks []Ask, bins []Ask, types []*structs.InstanceType) (unmet []Ask, noFit int) {
	sorted := sortedAsks(asks)
	free := slices.Clone(bins)
	for _, a := range sorted {
		placed := false
		for i := range free {
			if free[i].CPU >= a.CPU && free[i].MemoryMB >= a.MemoryMB {
				free[i].CPU -= a.CPU
				free[i].MemoryMB -= a.MemoryMB
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		if !fitsAny(a, types) {
			noFit++
			continue
		}
		unmet = append(unmet, a)
	}
	return unmet, noFit
}

// anyFits reports whether some ask fits in room (queued work the node
// could take: it is about to be placed there, so the node is not idle).
func anyFits(asks []Ask, room Ask) bool {
	for _, a := range asks {
		if a.CPU <= room.CPU && a.MemoryMB <= room.MemoryMB {
			return true
		}
	}
	return false
}

func fitsAny(a Ask, types []*structs.InstanceType) bool {
	for _, t := range types {
		if fits(a, t) {
			return true
		}
	}
	return false
}

func fits(a Ask, t *structs.InstanceType) bool { return a.CPU <= t.CPU && a.MemoryMB <= t.MemoryMB }

// sortedAsks returns asks, largest (memory, then CPU) first.
func sortedAsks(asks []Ask) []Ask {
	s := slices.Clone(asks)
	slices.SortStableFunc(s, func(a, b Ask) int {
		if c := cmp.Compare(b.MemoryMB, a.MemoryMB); c != 0 {
			return c
		}
		return cmp.Compare(b.CPU, a.CPU)
	})
	return s
}

// binsFor is how many instances of t first-fit-decreasing packing of asks
// (each fitting t) takes.
func binsFor(asks []Ask, t *structs.InstanceType) int {
	var free []Ask
	for _, a := range asks {
		placed := false
		for i := range free {
			if free[i].CPU >= a.CPU && free[i].MemoryMB >= a.MemoryMB {
				free[i].CPU -= a.CPU
				free[i].MemoryMB -= a.MemoryMB
				placed = true
				break
			}
		}
		if !placed {
			free = append(free, Ask{t.CPU - a.CPU, t.MemoryMB - a.MemoryMB})
		}
	}
	return len(free)
}

// chooseTypes returns the instances to create for unmet (sorted largest
// first, each fitting some type): while asks remain, among the types
// that fit the largest one, the type whose packing of the asks it fits
// costs least per ask packed (ties: fewer instances, then name) takes
// those asks.
func chooseTypes(unmet []Ask, types []*structs.InstanceType) []*structs.InstanceType {
	var out []*structs.InstanceType
	rest := sortedAsks(unmet)
	for len(rest) > 0 {
		var best *structs.InstanceType
		var bestN int
		var bestScore float64
		for _, t := range types {
			if !fits(rest[0], t) {
				continue
			}
			var mine []Ask
			for _, a := range rest {
				if fits(a, t) {
					mine = append(mine, a)
				}
			}
			n := binsFor(mine, t)
			score := float64(n) * t.PricePerHour / float64(len(mine))
			if best == nil || score < bestScore || score == bestScore && (n < bestN || n == bestN && t.Name < best.Name) {
				best, bestN, bestScore = t, n, score
			}
		}
		for range bestN {
			out = append(out, best)
		}
		rest = slices.DeleteFunc(rest, func(a Ask) bool { return fits(a, best) })
	}
	return out
}

func countType(list []*structs.InstanceType, t *structs.InstanceType) int {
	n := 0
	for _, o := range list {
		if o == t {
			n++
		}
	}
	return n
}

func askSum(asks []Ask) string {
	var cpu, mem int
	for _, a := range asks {
		cpu += a.CPU
		mem += a.MemoryMB
	}
	return fmt.Sprintf("%d MHz, %d MB", cpu, mem)
}

func oldestCreateInWindow(list []*structs.PoolInstance, now time.Time, window time.Duration) time.Time {
	oldest := now
	for _, in := range list {
		if t := time.Unix(0, in.CreateTime); t.After(now.Add(-window)) && t.Before(oldest) {
			oldest = t
		}
	}
	return oldest
}

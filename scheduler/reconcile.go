package scheduler

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
)

// Descriptions written on stopped allocations.
const (
	descNotNeeded   = "alloc not needed due to job update"
	descJobStopped  = "alloc not needed since job is stopped"
	descLost        = "alloc is lost since its node is down"
	descRescheduled = "alloc was rescheduled because it failed"
	descMigrating   = "alloc is being migrated"
	descUpdating    = "alloc is being updated due to job update"
	descNodeTainted = "alloc not needed as node is tainted"
	descReconnect   = "alloc not needed due to disconnected client reconnect"
)

// allocName is the name of instance index of a group: "<job>.<group>[<index>]".
func allocName(jobID, group string, index int) string {
	return jobID + "." + group + "[" + strconv.Itoa(index) + "]"
}

// allocIndex parses the instance index from an allocation name, or -1.
func allocIndex(name string) int {
	open := strings.LastIndexByte(name, '[')
	if open < 0 || !strings.HasSuffix(name, "]") {
		return -1
	}
	i, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// stopRequest stops one allocation.
type stopRequest struct {
	alloc        *structs.Allocation
	desc         string
	clientStatus string // "" leaves the client status alone
	// fenceAt, when set, is a lost allocation of a fenced group
	// (fence.go): its replacement waits for a follow-up evaluation at
	// fenceAt, whose ID the stop records.
	fenceAt time.Time
}

// placeRequest places one allocation of a group.
type placeRequest struct {
	group string
	name  string
	// prev is the allocation this one replaces (lost, failed, migrating or
	// destructively updated), or nil.
	prev *structs.Allocation
	// reschedule: prev failed; the placement carries its reschedule
	// tracker with delay and avoids its node.
	reschedule bool
	delay      time.Duration
	// canary: a canary of the group's deployment (structs/deployment.go).
	canary bool
	// stopPrev, when set, is the description of a stop of prev that
	// belongs to this placement: it is added just before the node is
	// selected (so prev's room counts) and withdrawn if none is found, so
	// a failed reschedule stays failed (with its lineage) and an update
	// that does not fit leaves the old version running.
	stopPrev string
}

// delayedReschedule is a failed allocation due for replacement at a later
// time, by a follow-up evaluation.
type delayedReschedule struct {
	alloc *structs.Allocation
	at    time.Time
}

// reconcileResult is what a generic scheduler must do for the job. Stops
// come first in the plan so that the placements see the freed capacity
// (except a placement's own stopPrev, see placeRequest).
type reconcileResult struct {
	stops   []stopRequest
	places  []placeRequest
	inplace []*structs.Allocation // live allocations moving to the new job version in place
	later   []delayedReschedule
	// migrateWait is set when migrations were held back by max_parallel:
	// a follow-up evaluation after this wait continues the drain.
	migrateWait time.Duration
	deferred    int
	desired     map[string]*structs.DesiredUpdates
	// fenceWaits are the times fenced allocations held by this pass
	// stop holding (fence.go): each needs a follow-up evaluation.
	fenceWaits []time.Time
	// unknown are allocations of a down node to mark unknown, each with
	// the time it becomes lost (disconnect.go).
	unknown []delayedReschedule
}

// reconciler compares a job's groups with its allocations. It reads
// nothing but its inputs.
type reconciler struct {
	job    *structs.Job // nil when the job was purged
	batch  bool
	now    time.Time
	evalID string
	node   func(id string) *structs.Node // nil when the node is gone
	// fits reports whether a live allocation's node passes the job's
	// drivers and constraints for its group; nil means it does.
	fits func(a *structs.Allocation) bool
	// deploy is the job's deployment, for jobs with a rolling group
	// (deployment.go); nil otherwise. roll is the current group's
	// decisions (nil: the group does not roll).
	deploy *deployState
	roll   *groupRoll
	result *reconcileResult
}

// reconcile computes the changes for the job's groups and the groups its
// allocations still belong to.
func (r *reconciler) reconcile(allocs []*structs.Allocation) *reconcileResult {
	r.result = &reconcileResult{desired: map[string]*structs.DesiredUpdates{}}
	byGroup := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	var names []string
	if r.job != nil {
		for _, tg := range r.job.TaskGroups {
			names = append(names, tg.Name)
		}
	}
	for _, name := range sortedKeys(byGroup) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		var tg *structs.TaskGroup
		if r.job != nil {
			tg = r.job.LookupTaskGroup(name)
		}
		group := byGroup[name]
		slices.SortFunc(group, func(a, b *structs.Allocation) int {
			return cmp.Or(cmp.Compare(allocIndex(a.Name), allocIndex(b.Name)), strings.Compare(a.ID, b.ID))
		})
		r.reconcileGroup(name, tg, group)
	}
	return r.result
}

// slotKind says how a counted allocation is carried forward.
type slotKind uint8

const (
	slotLost           slotKind = iota // on a down node: stop as lost, replace
	slotReschedule                     // failed and due: replace with a tracker
	slotMigrate                        // on a draining node: stop, replace elsewhere
	slotFailed                         // failed, not due (or never): counted, not replaced now
	slotKeep                           // live and healthy: keep or update
	slotFenced                         // lost, its client's own stop not yet certain: counted, not replaced (fence.go)
	slotDisconnected                   // unknown on a disconnected node, not replaced: counted (disconnect.go)
	slotReplaceUnknown                 // the replacement of an unknown allocation: placed (disconnect.go)
)

// dropRank orders slots for removal when a group has too many: replacing
// nothing is cheapest, then giving up on a failed allocation, and only
// then stopping a healthy one.
func (k slotKind) dropRank() int {
	switch k {
	case slotFailed:
		return 1
	case slotKeep:
		return 2
	}
	return 0
}

// slot is one allocation that counts toward the group's count.
type slot struct {
	alloc *structs.Allocation
	kind  slotKind
	index int
	delay time.Duration
	later *delayedReschedule // slotFailed due later: its follow-up
	until time.Time          // slotFenced: when the hold ends (zero: when the client says)
}

// groupState is a group's allocations, classified.
type groupState struct {
	slots    []slot                // counted, may be replaced or updated
	held     []*structs.Allocation // complete batch work: counted, never removed or replaced
	migrated map[string]bool       // IDs of allocations stopped for migration
	// disconnected are live allocations of a group with a disconnect
	// window whose node is down or which are unknown (disconnect.go).
	disconnected []*structs.Allocation
}

func (r *reconciler) classify(tg *structs.TaskGroup, allocs []*structs.Allocation) groupState {
	var gs groupState
	var policy *structs.ReschedulePolicy
	if tg != nil {
		policy = tg.ReschedulePolicy
	}
	add := func(s slot) {
		s.index = allocIndex(s.alloc.Name)
		gs.slots = append(gs.slots, s)
	}
	for _, a := range allocs {
		switch {
		case a.ServerTerminalStatus():
			if a.DesiredTransition.ShouldMigrate() {
				if gs.migrated == nil {
					gs.migrated = map[string]bool{}
				}
				gs.migrated[a.ID] = true
			}
			// A batch allocation that finished before it was stopped
			// still counts: its work is done.
			if r.batch && a.ClientStatus == structs.AllocClientStatusComplete && !r.olderBatchWork(a) {
				gs.held = append(gs.held, a)
			} else if until, ok := r.fenceHold(tg, a); ok {
				add(slot{alloc: a, kind: slotFenced, until: until})
			}
		case a.ClientTerminalStatus():
			if !r.olderBatchWork(a) {
				r.classifyTerminal(&gs, a, policy, add)
			}
		case (a.ClientStatus == structs.AllocClientStatusUnknown || r.lost(a)) && tg.HasDisconnectWindow():
			gs.disconnected = append(gs.disconnected, a)
		case r.lost(a):
			add(slot{alloc: a, kind: slotLost})
		case a.DesiredTransition.ShouldMigrate():
			add(slot{alloc: a, kind: slotMigrate})
		default:
			add(slot{alloc: a, kind: slotKeep})
		}
	}
	return gs
}

// olderBatchWork reports whether a is a finished allocation of an older
// version of a batch job. As in Nomad, it neither counts nor is replaced:
// a new version of a batch job runs all of its work again.
func (r *reconciler) olderBatchWork(a *structs.Allocation) bool {
	return r.batch && r.job != nil && a.Job != nil && a.TerminalStatus() &&
		(a.Job.Version < r.job.Version || a.Job.CreateIndex < r.job.CreateIndex)
}

// classifyTerminal handles allocations the client has finished with.
func (r *reconciler) classifyTerminal(gs *groupState, a *structs.Allocation, policy *structs.ReschedulePolicy, add func(slot)) {
	if a.NextAllocation != "" {
		return // already replaced
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusComplete:
		if r.batch {
			gs.held = append(gs.held, a) // batch work done: never replaced
		}
	case structs.AllocClientStatusFailed:
		d := decideReschedule(a, policy, r.now, r.evalID)
		switch d.kind {
		case rescheduleNow:
			add(slot{alloc: a, kind: slotReschedule, delay: d.delay})
		case rescheduleLater:
			add(slot{alloc: a, kind: slotFailed, later: &delayedReschedule{alloc: a, at: d.at}})
		default:
			add(slot{alloc: a, kind: slotFailed}) // exhausted: stays failed, not replaced
		}
	}
}

// lost reports whether a's node is down or gone.
func (r *reconciler) lost(a *structs.Allocation) bool {
	n := r.node(a.NodeID)
	return n == nil || n.TerminalStatus()
}

func (r *reconciler) reconcileGroup(name string, tg *structs.TaskGroup, allocs []*structs.Allocation) {
	du := &structs.DesiredUpdates{}
	r.result.desired[name] = du
	gs := r.classify(tg, allocs)
	// A periodic or parameterized job only launches children: it never
	// runs allocations of its own, whatever evaluates it.
	if tg == nil || r.job.Stopped() || tg.Count == 0 || r.job.IsTemplate() {
		r.stopGroup(gs, du)
		return
	}
	if len(gs.disconnected) > 0 {
		r.disconnected(tg, &gs, du)
	}
	gs.slots = r.reconnected(tg, gs.slots, du)
	r.roll = r.rollGroup(name, tg, &gs, du)
	gs.slots = r.limitMigrations(tg, gs, allocs)
	slots := r.dropExcess(gs.slots, len(gs.held), tg.Count, du)
	used := map[int]bool{}
	for _, s := range slots {
		used[s.index] = true
		r.carry(name, tg, s, du)
	}
	for _, a := range gs.held {
		used[allocIndex(a.Name)] = true
		du.Ignore++
	}
	missing := tg.Count - len(slots) - len(gs.held)
	for i := 0; missing > 0; i++ {
		if used[i] {
			continue
		}
		r.result.places = append(r.result.places, placeRequest{group: name, name: allocName(r.job.ID, name, i)})
		du.Place++
		missing--
	}
	r.finishRoll(name, tg, r.roll, allocs, du)
}

// stopGroup stops every live allocation of a group that should not run.
func (r *reconciler) stopGroup(gs groupState, du *structs.DesiredUpdates) {
	desc := descNotNeeded
	if r.job.Stopped() {
		desc = descJobStopped
	}
	for _, a := range gs.disconnected {
		r.stop(a, desc, "", du)
	}
	for _, s := range gs.slots {
		switch s.kind {
		case slotLost:
			r.stop(s.alloc, descLost, structs.AllocClientStatusLost, du)
		case slotReschedule, slotFailed, slotFenced, slotReplaceUnknown:
			du.Ignore++ // failed (or stopped already) and not needed: leave it
		default:
			r.stop(s.alloc, desc, "", du)
		}
	}
}

// limitMigrations keeps at most migrate.max_parallel migrations of the
// group in flight; the others stay where they are for now. Allocations on
// a node past its drain deadline are not paced: they all move now.
func (r *reconciler) limitMigrations(tg *structs.TaskGroup, gs groupState, allocs []*structs.Allocation) []slot {
	if tg.Migrate == nil || tg.Migrate.MaxParallel <= 0 {
		return gs.slots
	}
	inFlight := 0
	for _, a := range allocs {
		if !a.TerminalStatus() && a.ClientStatus == structs.AllocClientStatusPending && gs.migrated[a.PreviousAllocation] {
			inFlight++
		}
	}
	allowed := tg.Migrate.MaxParallel - inFlight
	out := gs.slots[:0:0]
	for _, s := range gs.slots {
		if s.kind == slotMigrate && !r.drainForced(s.alloc.NodeID) {
			if allowed <= 0 {
				s.kind = slotKeep
				r.result.deferred++
				r.noteMigrateWait(tg.Migrate.MinHealthyTime)
			}
			allowed--
		}
		out = append(out, s)
	}
	return out
}

// drainForced reports whether the node's drain is past its deadline.
func (r *reconciler) drainForced(nodeID string) bool {
	n := r.node(nodeID)
	return n != nil && n.DrainStrategy.Forced(r.now)
}

// minMigrateWait is the shortest wait before a follow-up evaluation
// continues a drain.
const minMigrateWait = time.Second

func (r *reconciler) noteMigrateWait(w time.Duration) {
	w = max(w, minMigrateWait)
	if r.result.migrateWait == 0 || w < r.result.migrateWait {
		r.result.migrateWait = w
	}
}

// dropExcess removes slots beyond count (held allocations count but cannot
// be removed) in dropRank order, highest index first within a rank. It
// returns the slots that remain.
func (r *reconciler) dropExcess(slots []slot, held, count int, du *structs.DesiredUpdates) []slot {
	excess := len(slots) + held - count
	if excess <= 0 {
		return slots
	}
	order := slices.Clone(slots)
	slices.SortStableFunc(order, func(a, b slot) int {
		return cmp.Or(cmp.Compare(a.kind.dropRank(), b.kind.dropRank()), r.olderFirst(a, b),
			cmp.Compare(sortIndex(b.index), sortIndex(a.index)))
	})
	drop := map[*structs.Allocation]bool{}
	for _, s := range order[:min(excess, len(order))] {
		drop[s.alloc] = true
		switch s.kind {
		case slotLost:
			r.stop(s.alloc, descLost, structs.AllocClientStatusLost, du)
		case slotFenced, slotReplaceUnknown:
			du.Ignore++ // stopped already, or not placed: it just stops counting
		default:
			r.stop(s.alloc, descNotNeeded, "", du)
		}
	}
	out := slots[:0:0]
	for _, s := range slots {
		if !drop[s.alloc] {
			out = append(out, s)
		}
	}
	return out
}

// olderFirst orders, in a rolling group, allocations of older job versions
// before current ones, and among the older ones first those whose name a
// current allocation holds (promoted canaries leave the group one over its
// count per canary: the old allocations they stand for go); 0 elsewhere.
func (r *reconciler) olderFirst(a, b slot) int {
	if r.roll == nil {
		return 0
	}
	rank := func(s slot) int {
		if r.current(s.alloc) == 1 {
			return 2
		}
		if r.roll.currentNames[s.alloc.Name] {
			return 0
		}
		return 1
	}
	return cmp.Compare(rank(a), rank(b))
}

// current is 1 for an allocation of the job's current version, else 0.
func (r *reconciler) current(a *structs.Allocation) int {
	if a.Job != nil && a.Job.JobModifyIndex == r.job.JobModifyIndex {
		return 1
	}
	return 0
}

// sortIndex puts unparseable names (index -1) above every real index.
func sortIndex(i int) int {
	if i < 0 {
		return math.MaxInt
	}
	return i
}

// carry decides what happens to a counted allocation that stays.
func (r *reconciler) carry(group string, tg *structs.TaskGroup, s slot, du *structs.DesiredUpdates) {
	a := s.alloc
	switch s.kind {
	case slotLost:
		if fence, ok := tg.StopAfterFence(); ok {
			r.stopFenced(a, r.now.Add(fence+fenceApplySlack), du)
			return
		}
		r.stop(a, descLost, structs.AllocClientStatusLost, du)
		r.replace(group, a)
		du.Place++
	case slotFenced:
		if !s.until.IsZero() {
			r.result.fenceWaits = append(r.result.fenceWaits, s.until)
		}
		du.Ignore++
	case slotDisconnected:
		du.Ignore++
	case slotReplaceUnknown:
		r.replace(group, a)
		du.Place++
	case slotReschedule:
		r.result.places = append(r.result.places, placeRequest{group: group, name: a.Name, prev: a,
			reschedule: true, delay: s.delay, stopPrev: descRescheduled})
		du.Place++
	case slotMigrate:
		r.result.stops = append(r.result.stops, stopRequest{alloc: a, desc: descMigrating})
		r.replace(group, a)
		du.Migrate++
	case slotFailed:
		if s.later != nil {
			r.result.later = append(r.result.later, *s.later)
		}
		du.Ignore++
	case slotKeep:
		r.update(group, a, du)
	}
}

// update moves a live allocation to the job's current version: not at all
// when it runs it already, in place when nothing destructive changed
// (destructiveChange) and its node still takes the group, else by a
// replacement.
func (r *reconciler) update(group string, a *structs.Allocation, du *structs.DesiredUpdates) {
	switch {
	case a.Job == nil || a.Job.JobModifyIndex == r.job.JobModifyIndex:
		du.Ignore++
	case destructiveChange(a.Job, r.job, group) != "" || !r.staysOn(a):
		if r.roll != nil {
			if r.roll.limit <= 0 {
				du.Ignore++ // paced: a later evaluation replaces it
				return
			}
			r.roll.limit--
		}
		r.result.places = append(r.result.places, placeRequest{group: group, name: a.Name, prev: a, stopPrev: descUpdating})
		du.DestructiveUpdate++
	default:
		r.result.inplace = append(r.result.inplace, a)
		du.InPlaceUpdate++
	}
}

// staysOn reports whether a's node can keep it under the job's current
// version: the node exists, is in the job's datacenters and passes the
// group's drivers and constraints.
func (r *reconciler) staysOn(a *structs.Allocation) bool {
	n := r.node(a.NodeID)
	if n == nil || !inDatacenters(n.Datacenter, r.job.Datacenters) {
		return false
	}
	return r.fits == nil || r.fits(a)
}

func (r *reconciler) stop(a *structs.Allocation, desc, clientStatus string, du *structs.DesiredUpdates) {
	r.result.stops = append(r.result.stops, stopRequest{alloc: a, desc: desc, clientStatus: clientStatus})
	du.Stop++
}

// replace places a successor of prev, whose stop is already decided.
func (r *reconciler) replace(group string, prev *structs.Allocation) {
	r.result.places = append(r.result.places, placeRequest{group: group, name: prev.Name, prev: prev})
}

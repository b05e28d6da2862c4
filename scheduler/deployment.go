package scheduler

import (
	"slices"
	"time"

	"github.com/drover-project/drover/structs"
)

// Rolling updates. A group whose update block has a positive max_parallel
// (structs.UpdateStrategy.Rolling) rolls a job change out through the
// deployment of the job's version:
//
//   - the first evaluation of a version with work to do (placements or
//     destructive updates) creates the deployment, with one state per
//     rolling group (desired total and canaries, the update block's
//     auto-revert, auto-promote and progress deadline);
//   - with canaries, the group first places that many allocations of the
//     new version beside the old ones, and changes nothing else until the
//     canaries are promoted; then the old allocations they stand for stop;
//   - destructive updates are paced: at most max_parallel allocations of
//     the deployment may be not yet healthy at once, and none moves while
//     one is unhealthy, or while the deployment is paused or over;
//   - new placements and in-place updates of a running deployment belong to
//     it (their health, reported by clients, counts in it);
//   - once every rolling group runs its count of healthy allocations of
//     the version, and its canaries (if any) were promoted, the deployment
//     is successful;
//   - a running deployment of an older version, or of a job that is
//     stopped or purged, is cancelled.
//
// Clients report health (DeploymentStatus); each report creates an
// evaluation, so the next batch is placed as the last one turns healthy.
// Failure, revert and promotion by the clock are the leader's deployment
// watcher's. Groups without a rolling update block never reach this code.

// deployState is an evaluation's view of the job's deployment.
type deployState struct {
	job *structs.Job
	now time.Time
	// d is a copy of the current version's deployment (nil: none yet);
	// write says the plan must carry it (created or changed).
	d     *structs.Deployment
	write bool
	// updates cancel an older version's running deployment.
	updates []*structs.DeploymentStatusUpdate
	// done stays true while every rolling group is complete.
	done, tracked bool
}

// newDeployState reads d (the job's newest deployment, or nil) for job
// (nil when purged).
func newDeployState(job *structs.Job, d *structs.Deployment, now time.Time) *deployState {
	ds := &deployState{job: job, now: now, done: true}
	if d == nil {
		return ds
	}
	current := job != nil && !job.Stopped() && d.JobVersion == job.Version && d.JobCreateIndex == job.CreateIndex
	if current {
		ds.d = d.Copy()
		return ds
	}
	if d.Active() {
		desc := structs.DeploymentStatusDescriptionNewerJob
		if job == nil || job.Stopped() {
			desc = structs.DeploymentStatusDescriptionStoppedJob
		}
		ds.updates = append(ds.updates, &structs.DeploymentStatusUpdate{DeploymentID: d.ID,
			Status: structs.DeploymentStatusCancelled, StatusDescription: desc})
	}
	return ds
}

// needsDeployment reports whether the scheduler must read the job's
// deployment: it has a rolling group, or it is stopped or purged (a
// deployment still running is cancelled).
func needsDeployment(job *structs.Job) bool {
	if job == nil || job.Stopped() {
		return true
	}
	for _, tg := range job.TaskGroups {
		if tg.Update.Rolling() {
			return true
		}
	}
	return false
}

// active reports whether placements join the deployment.
func (ds *deployState) active() bool { return ds != nil && ds.d != nil && ds.d.Active() }

// running reports whether the deployment may move on (not paused, not
// over).
func (ds *deployState) running() bool {
	return ds.d != nil && ds.d.Status == structs.DeploymentStatusRunning
}

// groupRoll is one rolling group's decisions in this evaluation.
type groupRoll struct {
	state *structs.DeploymentState
	// limit is how many destructive updates may start now.
	limit int
	// canaries are the group's live canaries awaiting promotion; they
	// stand beside the count.
	canaries []*structs.Allocation
	// currentNames are the names of the group's live allocations of the
	// job's current version: an older allocation under one of them (the
	// name a promoted canary took) is the first to go when the group is
	// over its count.
	currentNames map[string]bool
}

// rollGroup prepares a rolling group: it sets its canaries apart from
// gs's slots, creates the deployment (or the group's state in it) when
// the group has work to do, and computes the group's limit and canary
// placements. It returns nil when the group is not rolling.
func (r *reconciler) rollGroup(name string, tg *structs.TaskGroup, gs *groupState, du *structs.DesiredUpdates) *groupRoll {
	ds := r.deploy
	if ds == nil || !tg.Update.Rolling() {
		return nil
	}
	roll := &groupRoll{}
	if ds.d != nil {
		roll.state = ds.d.TaskGroups[name]
	}
	promoted := roll.state != nil && roll.state.Promoted
	keep := gs.slots[:0:0]
	for _, s := range gs.slots {
		a := s.alloc
		if ds.d == nil || a.DeploymentID != ds.d.ID || !a.DeploymentStatus.IsCanary() || promoted {
			keep = append(keep, s)
			continue
		}
		switch {
		case s.kind == slotLost:
			r.stop(a, descLost, structs.AllocClientStatusLost, du)
		case s.kind != slotKeep:
			du.Ignore++ // a failed canary stays failed; the watcher judges it
		case !ds.d.Active() || ds.d.Status == structs.DeploymentStatusFailed:
			r.stop(a, descNotNeeded, "", du) // the deployment is over: its canaries go
		default:
			roll.canaries = append(roll.canaries, a)
			du.Ignore++
		}
	}
	gs.slots = keep
	for _, s := range keep {
		if s.kind == slotKeep && r.current(s.alloc) == 1 {
			if roll.currentNames == nil {
				roll.currentNames = map[string]bool{}
			}
			roll.currentNames[s.alloc.Name] = true
		}
	}

	destructive := 0
	for _, s := range keep {
		if s.kind == slotKeep && r.needsDestructive(s.alloc) {
			destructive++
		}
	}
	missing := tg.Count - len(keep) - len(gs.held)
	if roll.state == nil && (destructive > 0 || missing > 0) && (ds.d == nil || ds.d.Active()) {
		roll.state = r.addGroupState(name, tg, destructive > 0)
	}
	if roll.state == nil {
		return roll.noDeployment(tg)
	}
	roll.limit = r.rollLimit(tg, roll, keep)
	r.placeCanaries(name, tg, roll, keep, du)
	return roll
}

// noDeployment is the roll of a group whose version's deployment is over
// or has no state for it: no destructive update moves.
func (roll *groupRoll) noDeployment(tg *structs.TaskGroup) *groupRoll {
	roll.limit = 0
	return roll
}

// addGroupState adds the group's state to the deployment, creating the
// deployment first if the version has none.
func (r *reconciler) addGroupState(name string, tg *structs.TaskGroup, destructive bool) *structs.DeploymentState {
	ds := r.deploy
	if ds.d == nil {
		ds.d = structs.NewDeployment(r.job, r.now)
	}
	u := tg.Update
	st := &structs.DeploymentState{AutoRevert: u.AutoRevert, AutoPromote: u.AutoPromote,
		ProgressDeadline: u.ProgressDeadline, DesiredTotal: tg.Count}
	if destructive {
		st.DesiredCanaries = u.Canary
	}
	if u.ProgressDeadline > 0 {
		st.RequireProgressBy = r.now.Add(u.ProgressDeadline).UTC()
	}
	ds.d.TaskGroups[name] = st
	if st.DesiredCanaries > 0 {
		ds.d.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
		if ds.d.HasAutoPromote() {
			ds.d.StatusDescription = structs.DeploymentStatusDescriptionRunningAutoPromotion
		}
	}
	ds.write = true
	return st
}

// canaryPhase reports whether the group's canaries await promotion.
func (roll *groupRoll) canaryPhase() bool {
	return roll.state != nil && roll.state.DesiredCanaries > 0 && !roll.state.Promoted
}

// rollLimit is how many destructive updates of the group may start now:
// none while the deployment is not running or the canaries await
// promotion, or while an allocation of the deployment is unhealthy;
// otherwise max_parallel less the deployment's allocations not yet
// healthy.
func (r *reconciler) rollLimit(tg *structs.TaskGroup, roll *groupRoll, keep []slot) int {
	if !r.deploy.running() || roll.canaryPhase() {
		return 0
	}
	limit := tg.Update.MaxParallel
	id := r.deploy.d.ID
	for _, s := range keep {
		a := s.alloc
		if a.DeploymentID != id || a.TerminalStatus() {
			continue
		}
		if a.DeploymentStatus.IsUnhealthy() {
			return 0
		}
		if !a.DeploymentStatus.IsHealthy() {
			limit--
		}
	}
	return max(limit, 0)
}

// placeCanaries places the canaries the group still lacks, under the
// names of the allocations they stand for (the lowest indexes first).
func (r *reconciler) placeCanaries(name string, tg *structs.TaskGroup, roll *groupRoll, keep []slot, du *structs.DesiredUpdates) {
	if !roll.canaryPhase() || !r.deploy.running() {
		return
	}
	want := roll.state.DesiredCanaries - len(roll.canaries)
	if want <= 0 {
		return
	}
	taken := map[string]bool{}
	for _, a := range roll.canaries {
		taken[a.Name] = true
	}
	var names []string
	for _, s := range keep {
		if !taken[s.alloc.Name] {
			names = append(names, s.alloc.Name)
			taken[s.alloc.Name] = true
		}
	}
	slices.SortFunc(names, func(a, b string) int { return allocIndex(a) - allocIndex(b) })
	for i := 0; len(names) < want; i++ {
		if n := allocName(r.job.ID, name, i); !taken[n] {
			names = append(names, n)
			taken[n] = true
		}
	}
	for _, n := range names[:want] {
		r.result.places = append(r.result.places, placeRequest{group: name, name: n, canary: true})
		du.Canary++
	}
}

// needsDestructive reports whether a live allocation must be replaced to
// run the job's current version.
func (r *reconciler) needsDestructive(a *structs.Allocation) bool {
	return a.Job != nil && a.Job.JobModifyIndex != r.job.JobModifyIndex &&
		(destructiveChange(a.Job, r.job, a.TaskGroup) != "" || !r.staysOn(a))
}

// finishRoll notes whether a rolling group is complete after this
// evaluation: nothing placed or replaced for it, its canaries promoted,
// and exactly its count of live allocations, each of the deployment and
// healthy.
func (r *reconciler) finishRoll(name string, tg *structs.TaskGroup, roll *groupRoll, allocs []*structs.Allocation, du *structs.DesiredUpdates) {
	ds := r.deploy
	if roll == nil || roll.state == nil || ds.d == nil {
		return
	}
	ds.tracked = true
	if du.Place+du.DestructiveUpdate+du.Canary+du.InPlaceUpdate+du.Migrate > 0 || roll.canaryPhase() || len(roll.canaries) > 0 {
		ds.done = false
		return
	}
	stopped := map[*structs.Allocation]bool{}
	for _, s := range r.result.stops {
		if s.alloc.TaskGroup == name {
			stopped[s.alloc] = true
		}
	}
	live := 0
	for _, a := range allocs {
		if a.TerminalStatus() || stopped[a] {
			continue
		}
		if a.DeploymentID != ds.d.ID || !a.DeploymentStatus.IsHealthy() {
			ds.done = false
			return
		}
		live++
	}
	if live != tg.Count {
		ds.done = false
	}
}

// complete marks a running deployment whose rolling groups are all
// complete successful.
func (ds *deployState) complete() {
	if ds.tracked && ds.done && ds.running() && !ds.d.RequiresPromotion() {
		ds.d.Status = structs.DeploymentStatusSuccessful
		ds.d.StatusDescription = structs.DeploymentStatusDescriptionSuccessful
		ds.d.ModifyTime = ds.now.UnixNano()
		ds.write = true
	}
}

// toPlan puts the deployment and the cancellations in the plan.
func (ds *deployState) toPlan(plan *structs.Plan) {
	if ds == nil {
		return
	}
	if ds.write {
		plan.Deployment = ds.d
	}
	plan.DeploymentUpdates = ds.updates
}

// joinPlacement makes a new allocation of a rolling group part of the
// running deployment; a canary is recorded in the group's state.
func (ds *deployState) joinPlacement(tg *structs.TaskGroup, a *structs.Allocation, canary bool) {
	if !ds.active() || !tg.Update.Rolling() {
		return
	}
	a.DeploymentID = ds.d.ID
	if !canary {
		return
	}
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	if st := ds.d.TaskGroups[tg.Name]; st != nil {
		st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
		ds.write = true
	}
}

// joinInPlace makes an allocation updated in place part of the running
// deployment: its health is reported again for the new version.
func (ds *deployState) joinInPlace(tg *structs.TaskGroup, a *structs.Allocation) {
	if !ds.active() || tg == nil || !tg.Update.Rolling() || a.DeploymentID == ds.d.ID {
		return
	}
	a.DeploymentID = ds.d.ID
	a.DeploymentStatus = nil
}

package server

import (
	"sync"
	"time"

	"github.com/drover-project/drover/server/evalbroker"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Node events (a node registering, going down or coming back, becoming
// eligible) call for evaluations: one per job with an allocation on the
// node that the client has not finished (so lost work is replaced, or work
// on a returning node is reconsidered), plus, when the node can take
// placements, one per system job (so a new node gets its system
// allocations).
//
// They are coalesced on the leader, before the Raft write, so that a storm
// of events (thousands of nodes joining, a node flapping) costs a bounded
// number of evaluations per job:
//
//   - absorbed: when the eval broker holds an evaluation of the job that
//     is still to be delivered, no evaluation is created. The schedulers
//     ignore Evaluation.NodeID and plan every node and allocation of the
//     job, so that evaluation covers the event once its worker plans from
//     a snapshot holding it; evalbroker.Broker.Cover binds the job's next
//     delivery to the event's Raft index (nodeEvalBatch.done). An
//     evaluation already delivered, or a blocked one, absorbs nothing.
//   - paced: otherwise a job gets a new evaluation, due at once unless the
//     job's previous node-event evaluation was due less than a window ago
//     (Config.NodeEvalWindow at first); then it is due a window after that
//     one (WaitUntil), and absorbs the events of that window. The window
//     doubles while the job's events keep coming, up to four first
//     windows, and starts again from the first after a quiet window.
//
// On a leader change the pacing is forgotten and the new leader restores
// pending evaluations from state; every delivery it makes waits for the
// index at which it restored them (evalFloor), so an evaluation that
// absorbed an event under the old leader still plans with it.

// nodeEvalBatch is what one node event calls for: the evaluations to write
// in the event's Raft entry, and the holds of those that absorbed it.
type nodeEvalBatch struct {
	evals []*structs.Evaluation
	holds []*evalbroker.Hold
	// pacer and writing: the jobs this batch writes a new evaluation of
	// are marked in pacer.writing with the channel writing until done.
	pacer   *nodeEvalPacer
	writing chan struct{}
}

// done resolves the holds with the index the event was written at (0 if
// its write failed) and ends the batch's writes in the pacer. Call it
// exactly once, after the write (on the leader the evaluations are then in
// the broker: the FSM hands them over before the write returns).
func (b *nodeEvalBatch) done(index uint64) {
	for _, h := range b.holds {
		h.Done(index)
	}
	if b.writing != nil {
		b.pacer.finish(b.writing)
	}
}

// nodeEvalWaits bounds how many times one node event waits for another's
// write of an evaluation of the same job before creating its own. Each
// wait is for a different write, one Raft commit; past the bound the event
// writes its own evaluation (due with the one in flight, see dueLocked).
const nodeEvalWaits = 16

// nodeEvals returns what a change of node's status calls for (see above).
// The caller writes the evaluations with the change and calls done.
//
// An event finding another event's write of a new evaluation of one of
// its jobs in flight waits for that write (one Raft commit) and then
// decides again: the evaluation it writes will absorb this event too.
// Without that, every event arriving during the commit would write an
// evaluation of its own.
func (s *Server) nodeEvals(st *state.StateStore, node *structs.Node, now time.Time) (*nodeEvalBatch, error) {
	jobs, err := nodeEventJobs(st, node, node.Ready())
	if err != nil {
		return nil, err
	}
	p := s.nodePacer
	for range nodeEvalWaits {
		wait := p.inFlight(jobs)
		if wait == nil {
			break
		}
		select {
		case <-wait:
		case <-s.shutdownCtx.Done():
			return nil, structs.ErrShutdown
		}
	}
	batch := &nodeEvalBatch{pacer: p}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, job := range jobs {
		if h, ok := s.broker.Cover(job.Namespace, job.ID); ok {
			batch.holds = append(batch.holds, h)
			continue
		}
		e := structs.NewEval(job, structs.EvalTriggerNodeUpdate, now)
		e.NodeID, e.NodeModifyIndex = node.ID, node.ModifyIndex
		e.WaitUntil = p.dueLocked(job.NamespacedID(), now)
		batch.evals = append(batch.evals, e)
		if batch.writing == nil {
			batch.writing = make(chan struct{})
		}
		p.writing[job.NamespacedID()] = batch.writing
	}
	if n := len(batch.holds); n > 0 {
		incrCounter(metricNodeEvalsAbsorbed, float32(n))
	}
	return batch, nil
}

// nodeEventJobs lists the jobs a node event concerns: those with an
// allocation on the node that the client has not finished, at their
// current version (a purged job is evaluated from the allocation's copy,
// which stops it), and, with systemJobs, every running system job.
func nodeEventJobs(st *state.StateStore, node *structs.Node, systemJobs bool) ([]*structs.Job, error) {
	allocs, err := st.AllocsByNode(nil, node.ID)
	if err != nil {
		return nil, err
	}
	seen := map[structs.NamespacedID]bool{}
	var jobs []*structs.Job
	add := func(job *structs.Job) {
		if id := job.NamespacedID(); !seen[id] {
			seen[id] = true
			jobs = append(jobs, job)
		}
	}
	for _, a := range allocs {
		if a.ClientTerminalStatus() || a.Job == nil || seen[structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}] {
			continue
		}
		job := a.Job
		if cur, err := st.JobByID(nil, a.Namespace, a.JobID); err == nil {
			job = cur
		}
		add(job)
	}
	if !systemJobs {
		return jobs, nil
	}
	all, err := st.Jobs(nil)
	if err != nil {
		return nil, err
	}
	for _, j := range all {
		if structs.IsSystemType(j.Type) && !j.Stopped() {
			add(j)
		}
	}
	return jobs, nil
}

// nodeEvalPacer remembers, per job, when its latest node-event evaluation
// is due and the window it was paced by, so that a job gets at most one per
// window, and which node event is writing a new one. Leader only; reset on
// gaining leadership. Its lock is taken before the broker's, never after.
type nodeEvalPacer struct {
	window time.Duration // the first window; it doubles up to maxWindow
	max    time.Duration

	mu        sync.Mutex
	last      map[structs.NamespacedID]paced         // guarded by mu
	writing   map[structs.NamespacedID]chan struct{} // guarded by mu; closed by finish
	lastPrune time.Time                              // guarded by mu
}

// paced is a job's latest node-event evaluation: when it is due and the
// window that separates it from the one before.
type paced struct {
	due    time.Time
	window time.Duration
}

// nodeEvalMaxWindows is how many first windows the window grows to while
// a job's node events keep coming (doubling each time).
const nodeEvalMaxWindows = 4

func newNodeEvalPacer(window time.Duration) *nodeEvalPacer {
	return &nodeEvalPacer{
		window:  window,
		max:     nodeEvalMaxWindows * window,
		last:    map[structs.NamespacedID]paced{},
		writing: map[structs.NamespacedID]chan struct{}{},
	}
}

// nodeEvalPruneSize is the size past which the pacer forgets jobs whose
// evaluation is more than the largest window old.
const nodeEvalPruneSize = 1024

// inFlight returns the channel of a write in flight of a new evaluation
// of one of jobs, or nil if there is none.
func (p *nodeEvalPacer) inFlight(jobs []*structs.Job) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.writing) == 0 {
		return nil
	}
	for _, j := range jobs {
		if ch, ok := p.writing[j.NamespacedID()]; ok {
			return ch
		}
	}
	return nil
}

// finish ends the writes marked with ch.
func (p *nodeEvalPacer) finish(ch chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.writing {
		if c == ch {
			delete(p.writing, id)
		}
	}
	close(ch)
}

// dueLocked returns when a new node-event evaluation of job is due:
//   - at once (the zero time) when the previous one is due at least its
//     window before now (a quiet job starts again from the first window);
//   - with the previous one when that is not yet due (an event that gave
//     up waiting for its write): never further ahead;
//   - else twice the previous window after it, at most maxWindow: a job
//     whose node events keep coming is evaluated at 1, 2, 4, 4... windows.
//
// No evaluation is due more than maxWindow ahead, so each stays within the
// broker's CoverDelay and absorbs later events.
func (p *nodeEvalPacer) dueLocked(job structs.NamespacedID, now time.Time) time.Time {
	p.pruneLocked(now)
	prev, ok := p.last[job]
	switch {
	case !ok || now.Sub(prev.due) >= prev.window:
		p.last[job] = paced{due: now, window: p.window}
		return time.Time{}
	case prev.due.After(now):
		return prev.due
	default:
		next := paced{window: min(2*prev.window, p.max)}
		next.due = prev.due.Add(next.window)
		p.last[job] = next
		return next.due
	}
}

// pruneLocked forgets entries that no longer delay anything, at most once
// per window and only once the map is large.
func (p *nodeEvalPacer) pruneLocked(now time.Time) {
	if len(p.last) < nodeEvalPruneSize || now.Sub(p.lastPrune) < p.window {
		return
	}
	p.lastPrune = now
	for id, at := range p.last {
		if now.Sub(at.due) >= at.window {
			delete(p.last, id)
		}
	}
}

// reset forgets the pacing (leadership gained). Writes in flight stay
// marked until they finish.
func (p *nodeEvalPacer) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.last)
}

// evalIDs lists the IDs of evals.
func evalIDs(evals []*structs.Evaluation) []string {
	if len(evals) == 0 {
		return nil
	}
	out := make([]string, len(evals))
	for i, e := range evals {
		out[i] = e.ID
	}
	return out
}

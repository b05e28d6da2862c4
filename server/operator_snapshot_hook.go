package server

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// afterSnapshotRestore has the leader loop restart leader-only components
// so they rebuild from the restored state (pending evaluations, blocked
// evaluations, heartbeat timers) and re-evaluate every job, and waits
// until it has. It gives up when leadership is lost meanwhile (a new
// leader builds from the restored state anyway) or after a minute.
func (s *Server) afterSnapshotRestore() {
	done := make(chan struct{})
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	select {
	case s.restoredCh <- done:
	case <-timeout.C:
		s.logger.Warn("leader loop did not take the snapshot restore notice")
		return
	case <-s.shutdownCh:
		return
	}
	select {
	case <-done:
	case <-timeout.C:
		s.logger.Warn("leader components did not restart within a minute of the snapshot restore")
	case <-s.shutdownCh:
	}
}

// reevaluateRestored writes, through Raft, an evaluation for every job the
// restored state may not match: each job that is not stopped, and each
// stopped or missing job that still has allocations the servers want
// running. The restored state says what should run, not what runs: the
// clients may have stopped allocations it lists as running (they report
// that when their watch sees the state go back, see agent/client) and run
// ones it does not know (they stop those), and the capacity blocked
// evaluations waited for may be there now. Jobs that already have a
// pending evaluation are left to it.
func (s *Server) reevaluateRestored() error {
	evals, err := restoredStateEvals(s.fsm.State(), time.Now())
	if err != nil {
		return err
	}
	for len(evals) > 0 {
		n := min(len(evals), cancelBatch)
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals[:n]}); err != nil {
			return err
		}
		evals = evals[n:]
	}
	return nil
}

// restoredStateEvals builds the evaluations reevaluateRestored writes.
func restoredStateEvals(st *state.StateStore, now time.Time) ([]*structs.Evaluation, error) {
	jobs, err := st.Jobs(nil)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	allocs, err := st.Allocs(nil)
	if err != nil {
		return nil, fmt.Errorf("allocations: %w", err)
	}
	type key = structs.NamespacedID
	want := map[key]*structs.Evaluation{}
	var order []key
	add := func(k key, e *structs.Evaluation) {
		if _, ok := want[k]; !ok {
			want[k] = e
			order = append(order, k)
		}
	}
	live := map[key]*structs.Job{}
	for _, j := range jobs {
		k := key{Namespace: j.Namespace, ID: j.ID}
		live[k] = j
		if !j.Stopped() && !j.IsTemplate() {
			add(k, structs.NewEval(j, structs.EvalTriggerSnapshotRestore, now))
		}
	}
	for _, a := range allocs {
		k := key{Namespace: a.Namespace, ID: a.JobID}
		if a.TerminalStatus() || a.Job == nil {
			continue
		}
		if j, ok := live[k]; ok && !j.Stopped() {
			continue
		}
		e := structs.NewEval(a.Job, structs.EvalTriggerSnapshotRestore, now)
		if j, ok := live[k]; ok {
			e = structs.NewEval(j, structs.EvalTriggerSnapshotRestore, now)
		}
		add(k, e)
	}
	out := make([]*structs.Evaluation, 0, len(order))
	for _, k := range order {
		evals, err := st.EvalsByJob(nil, k.Namespace, k.ID)
		if err != nil {
			return nil, fmt.Errorf("evaluations of job %s: %w", k.ID, err)
		}
		pending := false
		for _, e := range evals {
			pending = pending || e.Status == structs.EvalStatusPending
		}
		if !pending {
			out = append(out, want[k])
		}
	}
	return out, nil
}

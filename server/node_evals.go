package server

import (
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// nodeEvals returns the evaluations a change of node's status calls for:
// one per job with an allocation on the node that the client has not
// finished (so lost work is replaced, or work on a returning node is
// reconsidered), plus, when the node can take placements, one per system
// job that has none there yet (so a new node gets its system allocations).
// Each is tied to the node (NodeID, NodeModifyIndex) and triggered by
// node-update.
func (s *Server) nodeEvals(st *state.StateStore, node *structs.Node, now time.Time) ([]*structs.Evaluation, error) {
	return nodeEvalsFor(st, node, structs.EvalTriggerNodeUpdate, node.Ready(), now)
}

// nodeEvalsFor is nodeEvals with the trigger and system-job choice given.
func nodeEvalsFor(st *state.StateStore, node *structs.Node, trigger string, systemJobs bool, now time.Time) ([]*structs.Evaluation, error) {
	allocs, err := st.AllocsByNode(nil, node.ID)
	if err != nil {
		return nil, err
	}
	seen := map[structs.NamespacedID]bool{}
	var evals []*structs.Evaluation
	add := func(job *structs.Job) {
		id := job.NamespacedID()
		if seen[id] {
			return
		}
		seen[id] = true
		e := structs.NewEval(job, trigger, now)
		e.NodeID, e.NodeModifyIndex = node.ID, node.ModifyIndex
		evals = append(evals, e)
	}
	for _, a := range allocs {
		if a.ClientTerminalStatus() || a.Job == nil || seen[structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}] {
			continue
		}
		// The evaluation names the job's current version (a purged job is
		// evaluated from the allocation's copy, which stops it).
		job := a.Job
		if cur, err := st.JobByID(nil, a.Namespace, a.JobID); err == nil {
			job = cur
		}
		add(job)
	}
	if !systemJobs {
		return evals, nil
	}
	jobs, err := st.Jobs(nil)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if structs.IsSystemType(j.Type) && !j.Stopped() {
			add(j)
		}
	}
	return evals, nil
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

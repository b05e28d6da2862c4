package scheduler

import (
	"errors"
	"maps"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
)

// evalOutcome is what a scheduler learned, to be written on the evaluation.
type evalOutcome struct {
	failed    map[string]*structs.AllocMetric // group -> why its placements failed
	queued    map[string]int                  // group -> allocations not placed
	classElig map[string]bool                 // computed class -> could a node of it help
	escaped   bool                            // some check is finer than the computed class
	// deploymentID is the deployment of the job's version, once one
	// exists (set on the evaluation, as Nomad does: its CLI follows it).
	deploymentID string
}

// finishEval records how processing ended:
//   - too many rejected plans: a follow-up evaluation (max-plan-attempts)
//     is created and the evaluation fails pointing at it;
//   - another error: the evaluation is marked failed and the error returned;
//   - placements failed: a blocked evaluation is created (or, when the
//     evaluation is itself blocked, it is reblocked and not completed);
//   - otherwise the evaluation completes.
func finishEval(planner Planner, logger hclog.Logger, eval *structs.Evaluation, now time.Time, err error, out evalOutcome) error {
	var maxErr errMaxAttempts
	switch {
	case errors.As(err, &maxErr):
		logger.Debug("plan rejected too often, leaving a follow-up", "attempts", maxErr.attempts)
		follow := eval.CreateFollowUpEval(structs.EvalTriggerMaxPlans, maxAttemptsFollowupWait, now)
		if cerr := planner.CreateEval(follow); cerr != nil {
			return cerr
		}
		e := evalUpdate(eval, now, structs.EvalStatusFailed, err.Error(), out)
		e.NextEval = follow.ID
		return planner.UpdateEval(e)
	case err != nil:
		logger.Error("scheduling failed", "error", err)
		if uerr := planner.UpdateEval(evalUpdate(eval, now, structs.EvalStatusFailed, err.Error(), out)); uerr != nil {
			logger.Error("recording failed evaluation", "error", uerr)
		}
		return err
	}
	var blockedID string
	if len(out.failed) > 0 {
		if eval.Status == structs.EvalStatusBlocked {
			e := evalUpdate(eval, now, structs.EvalStatusBlocked, "", out)
			e.ClassEligibility, e.EscapedComputedClass = out.classElig, out.escaped
			return planner.ReblockEval(e)
		}
		blocked := eval.CreateBlockedEval(maps.Clone(out.classElig), out.escaped, copyMetrics(out.failed), now)
		if cerr := planner.CreateEval(blocked); cerr != nil {
			return cerr
		}
		blockedID = blocked.ID
		logger.Debug("placements failed, created blocked eval", "blocked_eval_id", blockedID)
	}
	e := evalUpdate(eval, now, structs.EvalStatusComplete, "", out)
	e.BlockedEval = blockedID
	return planner.UpdateEval(e)
}

// evalUpdate returns a copy of eval with the status and outcome set.
func evalUpdate(eval *structs.Evaluation, now time.Time, status, desc string, out evalOutcome) *structs.Evaluation {
	e := eval.Copy()
	e.Status, e.StatusDescription = status, desc
	e.FailedTGAllocs = out.failed
	e.QueuedAllocations = out.queued
	if out.deploymentID != "" {
		e.DeploymentID = out.deploymentID
	}
	e.ModifyTime = now.UnixNano()
	return e
}

func copyMetrics(in map[string]*structs.AllocMetric) map[string]*structs.AllocMetric {
	out := make(map[string]*structs.AllocMetric, len(in))
	for k, v := range in {
		out[k] = v.Copy()
	}
	return out
}

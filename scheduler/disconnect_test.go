package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// disconnectSetup stores a count=1 job with a one-minute disconnect window
// (edit adjusts its group) running on node 0 of two, takes node 0 down and
// runs the node's evaluation.
func disconnectSetup(t *testing.T, edit func(tg *structs.TaskGroup)) (h *Harness, now *time.Time, job *structs.Job, nodes []*structs.Node, orig *structs.Allocation) {
	t.Helper()
	h = testHarness(t)
	clock := HarnessEpoch
	now = &clock
	h.Now = func() time.Time { return *now }
	nodes = mockNodes(t, h, 2)
	j := mock.Job()
	j.TaskGroups[0].Count = 1
	w := time.Minute
	j.TaskGroups[0].MaxClientDisconnect = &w
	if edit != nil {
		edit(j.TaskGroups[0])
	}
	job = addJob(t, h, j)
	orig = running(t, h, job, nodes[:1], 1)[0]
	if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[0].ID, structs.NodeStatusDown, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	return h, now, job, nodes, orig
}

func storedAlloc(t *testing.T, h *Harness, id string) *structs.Allocation {
	t.Helper()
	a, err := h.State.AllocByID(nil, id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An allocation of a down node whose group has a disconnect window
// becomes unknown (not lost), with a follow-up at the window's end, and is
// replaced on another node; it stays so within the window.
func TestDisconnectUnknownAndReplaced(t *testing.T) {
	h, now, job, nodes, orig := disconnectSetup(t, nil)
	a := storedAlloc(t, h, orig.ID)
	if a.ClientStatus != structs.AllocClientStatusUnknown || a.DesiredStatus != structs.AllocDesiredStatusRun || a.FollowupEvalID == "" {
		t.Fatalf("original after the node went down: client %q desired %q follow-up %q", a.ClientStatus, a.DesiredStatus, a.FollowupEvalID)
	}
	if len(h.CreateEvals) != 1 || h.CreateEvals[0].TriggeredBy != structs.EvalTriggerMaxDisconnect ||
		!h.CreateEvals[0].WaitUntil.Equal(HarnessEpoch.Add(time.Minute+fenceApplySlack)) {
		t.Fatalf("follow-ups %+v", h.CreateEvals)
	}
	placed := placedIn(h, []*structs.Allocation{orig})
	if len(placed) != 1 || placed[0].NodeID != nodes[1].ID || placed[0].PreviousAllocation != orig.ID || placed[0].Name != orig.Name {
		t.Fatalf("replacement %+v", placed)
	}
	if len(stopsIn(h)) != 0 {
		t.Fatalf("stops %v", stopsIn(h))
	}

	// Within the window nothing changes.
	*now = now.Add(30 * time.Second)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	if p := placedIn(h, []*structs.Allocation{orig}); len(p) != 1 || len(stopsIn(h)) != 0 {
		t.Fatalf("within the window: placed %v stops %v", names(p), stopsIn(h))
	}

	// Past it: lost, and not replaced again.
	*now = HarnessEpoch.Add(time.Minute + time.Second)
	process(t, h, job, structs.EvalTriggerMaxDisconnect)
	if s := stopsIn(h)[orig.ID]; s == nil || s.ClientStatus != structs.AllocClientStatusLost {
		t.Fatalf("past the window: stop %+v", s)
	}
	if p := placedIn(h, []*structs.Allocation{orig}); len(p) != 1 {
		t.Fatalf("placed again: %v", names(p))
	}
}

// With replace = false the unknown allocation keeps its place; past the
// window it is lost and replaced.
func TestDisconnectNoReplace(t *testing.T) {
	no := false
	h, now, job, _, orig := disconnectSetup(t, func(tg *structs.TaskGroup) {
		tg.MaxClientDisconnect = nil
		tg.Disconnect = &structs.DisconnectStrategy{LostAfter: time.Minute, Replace: &no}
	})
	if a := storedAlloc(t, h, orig.ID); a.ClientStatus != structs.AllocClientStatusUnknown {
		t.Fatalf("client status %q", a.ClientStatus)
	}
	if p := placedIn(h, []*structs.Allocation{orig}); len(p) != 0 {
		t.Fatalf("replaced despite replace = false: %v", names(p))
	}
	*now = HarnessEpoch.Add(2 * time.Minute)
	process(t, h, job, structs.EvalTriggerMaxDisconnect)
	if p := placedIn(h, []*structs.Allocation{orig}); len(p) != 1 {
		t.Fatalf("past the window: placed %v", names(p))
	}
}

// When the client comes back within the window and reports the original
// running, the reconcile policy keeps one of the two.
func TestDisconnectReconnectPolicies(t *testing.T) {
	cases := []struct {
		policy   string
		original bool // the original is kept
		edit     func(orig, repl *structs.Allocation)
	}{
		{structs.ReconcileOptionKeepOriginal, true, nil},
		{structs.ReconcileOptionKeepReplacement, false, nil},
		{structs.ReconcileOptionLongestRunning, true, nil},
		{structs.ReconcileOptionLongestRunning, false, func(orig, repl *structs.Allocation) {
			// The original restarted after the replacement started.
			orig.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: HarnessEpoch.Add(50 * time.Second)}})
		}},
		{structs.ReconcileOptionBestScore, true, nil},
		{structs.ReconcileOptionBestScore, false, func(orig, repl *structs.Allocation) {
			repl.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: repl.NodeID, NormScore: 0.9}}}
			orig.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: orig.NodeID, NormScore: 0.2}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			h, now, job, nodes, orig := disconnectSetup(t, func(tg *structs.TaskGroup) {
				tg.MaxClientDisconnect = nil
				tg.Disconnect = &structs.DisconnectStrategy{LostAfter: time.Minute, Reconcile: tc.policy}
			})
			repl := placedIn(h, []*structs.Allocation{orig})[0]
			*now = now.Add(40 * time.Second)
			if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[0].ID, structs.NodeStatusReady, 0, nil, nil); err != nil {
				t.Fatal(err)
			}
			o := storedAlloc(t, h, orig.ID).Copy()
			r := storedAlloc(t, h, repl.ID).Copy()
			o.ClientStatus, r.ClientStatus = structs.AllocClientStatusRunning, structs.AllocClientStatusRunning
			o.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: HarnessEpoch.Add(-time.Hour)}})
			r.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: HarnessEpoch.Add(time.Second)}})
			if tc.edit != nil {
				tc.edit(o, r)
			}
			addAllocs(t, h, o, r)
			process(t, h, job, structs.EvalTriggerReconnect)
			stops := stopsIn(h)
			loser, winner := repl.ID, orig.ID
			if !tc.original {
				loser, winner = orig.ID, repl.ID
			}
			if s := stops[loser]; s == nil || s.DesiredDescription != descReconnect || stops[winner] != nil {
				t.Fatalf("stops %v: want %s stopped (reconnect) and %s kept", stops, loser, winner)
			}
			if p := placedIn(h, []*structs.Allocation{orig, repl}); len(p) != 0 {
				t.Fatalf("placed %v", names(p))
			}
		})
	}
}

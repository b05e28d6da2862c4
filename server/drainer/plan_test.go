package drainer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// world is a small cluster in a state store: nodes n1..n3 and jobs by
// short name, with allocations described compactly.
type world struct {
	t     *testing.T
	st    *state.StateStore
	mu    sync.Mutex
	index uint64 // guarded by mu
	nodes map[string]*structs.Node
	jobs  map[string]*structs.Job
}

func newWorld(t *testing.T) *world {
	t.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, st: st, nodes: map[string]*structs.Node{}, jobs: map[string]*structs.Job{}}
	for _, name := range []string{"n1", "n2", "n3"} {
		n := mock.Node()
		n.ID, n.Name = name, name
		w.nodes[name] = n
		if err := st.UpsertNode(w.next(), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// next returns the next write index; safe for concurrent use.
func (w *world) next() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	return w.index
}

// job registers a job of the given type with one group "web" of count
// instances and migrate max_parallel par.
func (w *world) job(name, typ string, count, par int) *structs.Job {
	w.t.Helper()
	j := mock.Job()
	j.ID, j.Name, j.Type = name, name, typ
	j.TaskGroups[0].Count = count
	j.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: par}
	if err := w.st.UpsertJob(w.next(), j, nil); err != nil {
		w.t.Fatal(err)
	}
	stored, err := w.st.JobByID(nil, j.Namespace, j.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	w.jobs[name] = stored
	return stored
}

// alloc adds instance i of job on node, with a spec of comma-separated
// words: "running" (default), "pending", "complete", "stop" (desired
// stop), "migrate" (marked).
func (w *world) alloc(job string, i int, node, spec string) *structs.Allocation {
	w.t.Helper()
	j := w.jobs[job]
	a := mock.Alloc(j, w.nodes[node])
	a.ID = fmt.Sprintf("%s-%d-%s", job, i, node)
	a.Name = fmt.Sprintf("%s.web[%d]", job, i)
	a.ClientStatus = structs.AllocClientStatusRunning
	for _, word := range strings.Split(spec, ",") {
		switch word {
		case "", "running":
		case "pending":
			a.ClientStatus = structs.AllocClientStatusPending
		case "complete":
			a.ClientStatus = structs.AllocClientStatusComplete
		case "stop":
			a.DesiredStatus = structs.AllocDesiredStatusStop
		case "migrate":
			yes := true
			a.DesiredTransition.Migrate = &yes
		case "healthy", "unhealthy":
			ok := word == "healthy"
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &ok, Timestamp: t0}
		default:
			w.t.Fatalf("unknown alloc spec word %q", word)
		}
	}
	if err := w.st.UpsertAllocs(w.next(), []*structs.Allocation{a}); err != nil {
		w.t.Fatal(err)
	}
	return a
}

// drain starts a drain of node at t0 with the given deadline.
func (w *world) drain(node string, deadline time.Duration, ignoreSystem bool) {
	w.t.Helper()
	ds := &structs.DrainStrategy{Deadline: deadline, IgnoreSystemJobs: ignoreSystem, StartedAt: t0}
	if err := w.st.UpdateNodeDrain(w.next(), &structs.NodeUpdateDrainRequest{NodeID: node, DrainStrategy: ds}); err != nil {
		w.t.Fatal(err)
	}
}

func names(allocs []*structs.Allocation) string {
	var out []string
	for _, a := range allocs {
		out = append(out, a.ID)
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name  string
		setup func(w *world)
		now   time.Time
		// wantMigrate lists allocation IDs; wantEvals job IDs; wantDone
		// node IDs.
		wantMigrate, wantEvals, wantDone string
		wantNext                         time.Time
	}{
		{name: "no drain", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 2, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n2", "")
		}},
		{name: "one at a time: max_parallel 1", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 6, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n1", "")
			for i := 2; i < 6; i++ {
				w.alloc("web", i, "n2", "")
			}
			w.drain("n1", time.Hour, false)
		}, wantMigrate: "web-0-n1", wantEvals: "web", wantNext: t0.Add(time.Hour)},
		{name: "a marked allocation still running uses the budget", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 6, 1)
			w.alloc("web", 0, "n1", "migrate")
			w.alloc("web", 1, "n1", "")
			for i := 2; i < 6; i++ {
				w.alloc("web", i, "n2", "")
			}
			w.drain("n1", 0, false)
		}},
		{name: "a pending replacement uses the budget", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 6, 1)
			w.alloc("web", 0, "n1", "migrate,stop")
			w.alloc("web", 1, "n1", "")
			for i := 2; i < 6; i++ {
				w.alloc("web", i, "n2", "")
			}
			w.alloc("web", 0, "n3", "pending")
			w.drain("n1", 0, false)
		}},
		{name: "the next one moves once the replacement runs", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 6, 1)
			w.alloc("web", 0, "n1", "migrate,stop,complete")
			w.alloc("web", 1, "n1", "")
			for i := 2; i < 6; i++ {
				w.alloc("web", i, "n2", "")
			}
			w.alloc("web", 0, "n3", "running")
			w.drain("n1", 0, false)
		}, wantMigrate: "web-1-n1", wantEvals: "web"},
		{name: "max_parallel 2", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 4, 2)
			for i := 0; i < 3; i++ {
				w.alloc("web", i, "n1", "")
			}
			w.alloc("web", 3, "n2", "")
			w.drain("n1", 0, false)
		}, wantMigrate: "web-0-n1 web-1-n1", wantEvals: "web"},
		{name: "an unhealthy job waits", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 3, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n2", "")
			w.alloc("web", 2, "n2", "pending")
			w.drain("n1", 0, false)
		}},
		{name: "two draining nodes share a group's budget", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 3, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n2", "")
			w.alloc("web", 2, "n3", "")
			w.drain("n1", 0, false)
			w.drain("n2", 0, false)
		}, wantMigrate: "web-0-n1", wantEvals: "web"},
		{name: "budgets are per job", setup: func(w *world) {
			w.job("a", structs.JobTypeService, 2, 1)
			w.job("b", structs.JobTypeService, 2, 1)
			for _, j := range []string{"a", "b"} {
				w.alloc(j, 0, "n1", "")
				w.alloc(j, 1, "n1", "")
			}
			w.drain("n1", 0, false)
		}, wantMigrate: "a-0-n1 b-0-n1", wantEvals: "a b"},
		{name: "batch work is left to finish", setup: func(w *world) {
			w.job("batch", structs.JobTypeBatch, 1, 1)
			w.alloc("batch", 0, "n1", "")
			w.drain("n1", 0, false)
		}},
		{name: "system allocations wait for the others", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 2, 1)
			w.job("sys", structs.JobTypeSystem, 1, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n2", "")
			w.alloc("sys", 0, "n1", "")
			w.drain("n1", 0, false)
		}, wantMigrate: "web-0-n1", wantEvals: "web"},
		{name: "system allocations go last", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 1, 1)
			w.job("sys", structs.JobTypeSystem, 1, 1)
			w.alloc("web", 0, "n1", "migrate,stop")
			w.alloc("web", 0, "n2", "")
			w.alloc("sys", 0, "n1", "")
			w.drain("n1", 0, false)
		}, wantMigrate: "sys-0-n1", wantEvals: "sys"},
		{name: "ignored system allocations stay", setup: func(w *world) {
			w.job("sys", structs.JobTypeSystem, 1, 1)
			w.alloc("sys", 0, "n1", "")
			w.drain("n1", 0, true)
		}, wantDone: "n1"},
		{name: "nothing live: complete", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 1, 1)
			w.alloc("web", 0, "n1", "migrate,stop")
			w.alloc("web", 1, "n1", "complete")
			w.drain("n1", time.Hour, false)
		}, wantDone: "n1"},
		{name: "deadline passed: everything at once", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 3, 1)
			w.job("batch", structs.JobTypeBatch, 1, 1)
			w.job("sys", structs.JobTypeSystem, 1, 1)
			for i := 0; i < 3; i++ {
				w.alloc("web", i, "n1", "")
			}
			w.alloc("batch", 0, "n1", "")
			w.alloc("sys", 0, "n1", "")
			w.drain("n1", time.Minute, false)
		}, now: t0.Add(time.Minute), wantMigrate: "batch-0-n1 sys-0-n1 web-0-n1 web-1-n1 web-2-n1", wantEvals: "batch sys web"},
		{name: "forced drain", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 2, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n1", "")
			w.drain("n1", -1, true)
		}, wantMigrate: "web-0-n1 web-1-n1", wantEvals: "web"},
		{name: "stopped job: all of it", setup: func(w *world) {
			j := w.job("web", structs.JobTypeService, 2, 1)
			w.alloc("web", 0, "n1", "")
			w.alloc("web", 1, "n1", "")
			if err := w.st.DeregisterJob(w.next(), j.Namespace, j.ID, false, 0, nil); err != nil {
				t.Fatal(err)
			}
			w.drain("n1", 0, false)
		}, wantMigrate: "web-0-n1 web-1-n1", wantEvals: "web"},
		{name: "earliest deadline ahead", setup: func(w *world) {
			w.job("web", structs.JobTypeService, 2, 1)
			w.alloc("web", 0, "n1", "pending")
			w.alloc("web", 1, "n2", "pending")
			w.drain("n1", 2*time.Hour, false)
			w.drain("n2", time.Hour, false)
		}, wantNext: t0.Add(time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			now := tc.now
			if now.IsZero() {
				now = t0.Add(time.Second)
			}
			p, err := Plan(w.st, nil, now)
			if err != nil {
				t.Fatal(err)
			}
			var evals, done []string
			for _, e := range p.Evals {
				evals = append(evals, e.JobID)
				if e.TriggeredBy != structs.EvalTriggerNodeDrain || e.Status != structs.EvalStatusPending || e.Type != w.jobs[e.JobID].Type {
					t.Errorf("eval %+v", e)
				}
			}
			for _, n := range p.Complete {
				done = append(done, n.ID)
			}
			got := fmt.Sprintf("migrate=%q evals=%q done=%q next=%v", names(p.Migrate), strings.Join(evals, " "),
				strings.Join(done, " "), p.NextDeadline)
			want := fmt.Sprintf("migrate=%q evals=%q done=%q next=%v", tc.wantMigrate, tc.wantEvals, tc.wantDone, tc.wantNext)
			if got != want {
				t.Fatalf("pass:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestForceDeadline(t *testing.T) {
	cases := []struct {
		name   string
		ds     *structs.DrainStrategy
		want   time.Time
		wantOK bool
	}{
		{name: "none", ds: nil},
		{name: "no deadline", ds: &structs.DrainStrategy{StartedAt: t0}},
		{name: "deadline", ds: &structs.DrainStrategy{Deadline: time.Minute, StartedAt: t0}, want: t0.Add(time.Minute), wantOK: true},
		{name: "force time wins", ds: &structs.DrainStrategy{Deadline: time.Minute, StartedAt: t0, ForceDeadline: t0.Add(time.Hour)},
			want: t0.Add(time.Hour), wantOK: true},
		{name: "forced", ds: &structs.DrainStrategy{Deadline: -1, StartedAt: t0}, want: t0, wantOK: true},
		{name: "deadline without a start", ds: &structs.DrainStrategy{Deadline: time.Minute}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ForceDeadline(tc.ds)
			if !got.Equal(tc.want) || ok != tc.wantOK {
				t.Fatalf("ForceDeadline = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestSplitMarks(t *testing.T) {
	w := newWorld(t)
	w.job("a", structs.JobTypeService, 3, 3)
	w.job("b", structs.JobTypeService, 1, 1)
	for i := 0; i < 3; i++ {
		w.alloc("a", i, "n1", "")
	}
	w.alloc("b", 0, "n1", "")
	w.drain("n1", -1, false)
	p, err := Plan(w.st, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	batches := splitMarks(p, 2)
	var got []string
	ids := map[string]bool{}
	for _, b := range batches {
		var jobs []string
		for _, e := range b.evals {
			jobs = append(jobs, e.JobID)
			if ids[e.ID] {
				t.Errorf("evaluation ID %s used twice", e.ID)
			}
			ids[e.ID] = true
		}
		got = append(got, names(b.allocs)+" / "+strings.Join(jobs, ","))
	}
	want := []string{"a-0-n1 a-1-n1 / a", "a-2-n1 b-0-n1 / a,b"}
	if !slices.Equal(got, want) {
		t.Fatalf("batches %q, want %q", got, want)
	}
}

package coregc

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

// ago returns unix nanoseconds d before t0.
func ago(d time.Duration) int64 { return t0.Add(-d).UnixNano() }

// world builds state for collection tests. Object IDs are short names so
// expectations read plainly.
type world struct {
	t     *testing.T
	st    *state.StateStore
	mu    sync.Mutex
	index uint64 // guarded by mu
	node  *structs.Node
}

func newWorld(t *testing.T) *world {
	t.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, st: st}
	w.node = w.addNode("n0", structs.NodeStatusReady, 0)
	return w
}

func (w *world) next() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	return w.index
}

func (w *world) check(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) addNode(id, status string, downFor time.Duration) *structs.Node {
	w.t.Helper()
	n := mock.Node()
	n.ID, n.Name, n.Status = id, id, status
	n.StatusUpdatedAt = t0.Add(-downFor).Unix()
	w.check(w.st.UpsertNode(w.next(), n, nil))
	return n
}

// job registers a job submitted submitted ago.
func (w *world) job(id, typ string, submitted time.Duration) *structs.Job {
	w.t.Helper()
	j := mock.Job()
	j.ID, j.Name, j.Type = id, id, typ
	j.SubmitTime = ago(submitted)
	j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: time.Second}
	w.check(w.st.UpsertJob(w.next(), j, nil))
	return j
}

// stop stops a job (its SubmitTime becomes the stop time).
func (w *world) stop(id string, when time.Duration) {
	w.t.Helper()
	w.check(w.st.DeregisterJob(w.next(), structs.DefaultNamespace, id, false, ago(when), nil))
}

// eval writes an evaluation of job with status, modified mod ago.
func (w *world) eval(id, job, typ, status string, mod time.Duration) {
	w.t.Helper()
	e := mock.Eval()
	e.ID, e.JobID, e.Type, e.Status = id, job, typ, status
	e.ModifyTime = ago(mod)
	w.check(w.st.UpsertEvals(w.next(), []*structs.Evaluation{e}))
}

// alloc writes an allocation of job from eval, modified mod ago, with a
// spec of comma-separated words: client status (running, complete,
// failed, lost, pending), "stop" (desired), "replaced" (NextAllocation),
// "dep:<id>" (its deployment).
func (w *world) alloc(id, job, eval, spec string, mod time.Duration) {
	w.t.Helper()
	j, err := w.st.JobByID(nil, structs.DefaultNamespace, job)
	w.check(err)
	a := mock.Alloc(j, w.node)
	a.ID, a.EvalID = id, eval
	a.CreateTime, a.ModifyTime = ago(mod), ago(mod)
	for _, word := range strings.Split(spec, ",") {
		switch word {
		case "running", "complete", "failed", "lost", "pending":
			a.ClientStatus = word
		case "stop":
			a.DesiredStatus = structs.AllocDesiredStatusStop
		case "replaced":
			a.NextAllocation = "next"
		default:
			if d, ok := strings.CutPrefix(word, "dep:"); ok {
				a.DeploymentID = d
				continue
			}
			w.t.Fatalf("unknown alloc spec word %q", word)
		}
	}
	w.check(w.st.UpsertAllocs(w.next(), []*structs.Allocation{a}))
}

// deployment writes a deployment of job with status, modified mod ago.
func (w *world) deployment(id, job, status string, mod time.Duration) {
	w.t.Helper()
	d := &structs.Deployment{ID: id, Namespace: structs.DefaultNamespace, JobID: job, Status: status,
		CreateTime: ago(mod), ModifyTime: ago(mod)}
	w.check(w.st.UpsertDeployment(w.next(), d))
}

func (g *Garbage) String() string {
	var jobs []string
	for _, j := range g.Jobs {
		jobs = append(jobs, j.ID)
	}
	sorted := func(ids []string) string {
		ids = slices.Clone(ids)
		slices.Sort(ids)
		return strings.Join(ids, " ")
	}
	out := fmt.Sprintf("evals=[%s] allocs=[%s] jobs=[%s] nodes=[%s]",
		sorted(g.Evals), sorted(g.Allocs), sorted(jobs), sorted(g.Nodes))
	if len(g.Deployments) > 0 {
		out += fmt.Sprintf(" deployments=[%s]", sorted(g.Deployments))
	}
	return out
}

func TestFind(t *testing.T) {
	const svc, batch = structs.JobTypeService, structs.JobTypeBatch
	const complete = structs.EvalStatusComplete
	cases := []struct {
		name  string
		setup func(w *world)
		force bool // Force instead of the default thresholds
		want  string
	}{
		{name: "old evaluation of a live job, with its stopped allocation", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 2*time.Hour)
			w.alloc("a1", "web", "e1", "stop,complete", 2*time.Hour)
			w.eval("e2", "web", svc, complete, 2*time.Hour)
			w.alloc("a2", "web", "e2", "running", 2*time.Hour)
		}, want: "evals=[e1] allocs=[a1] jobs=[] nodes=[]"},
		{name: "young evaluation stays", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 30*time.Minute)
			w.alloc("a1", "web", "e1", "stop,complete", 2*time.Hour)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "live evaluation stays", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, structs.EvalStatusBlocked, 2*time.Hour)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "an allocation a client still runs keeps its evaluation", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 2*time.Hour)
			w.alloc("a1", "web", "e1", "stop,running", 2*time.Hour)
			w.alloc("a2", "web", "e1", "stop,complete", 2*time.Hour)
		}, want: "evals=[] allocs=[a2] jobs=[] nodes=[]"},
		{name: "young allocation keeps its evaluation", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 2*time.Hour)
			w.alloc("a1", "web", "e1", "stop,complete", 10*time.Minute)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "failed allocation awaiting rescheduling stays", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 2*time.Hour)
			w.alloc("a1", "web", "e1", "failed", 2*time.Hour)
			w.alloc("a2", "web", "e1", "failed,replaced", 2*time.Hour)
			w.alloc("a3", "web", "e1", "failed,stop", 2*time.Hour)
			w.alloc("a4", "web", "e1", "lost", 2*time.Hour)
			w.eval("e2", "web", svc, complete, 2*time.Hour)
			w.alloc("a5", "web", "e2", "running", 2*time.Hour) // the job runs
		}, want: "evals=[] allocs=[a2 a3 a4] jobs=[] nodes=[]"},
		{name: "a live batch job keeps its finished work", setup: func(w *world) {
			w.job("b", batch, 10*time.Hour)
			w.eval("e1", "b", batch, complete, 2*time.Hour)
			w.alloc("a1", "b", "e1", "complete", 2*time.Hour)
			w.alloc("a2", "b", "e1", "running", 2*time.Hour)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "a live sysbatch job keeps its finished work", setup: func(w *world) {
			// Its finished allocations keep it from running again there.
			w.job("sb", structs.JobTypeSysBatch, 10*time.Hour)
			w.eval("e1", "sb", structs.JobTypeSysBatch, complete, 2*time.Hour)
			w.alloc("a1", "sb", "e1", "complete", 2*time.Hour)
			w.alloc("a2", "sb", "e1", "running", 2*time.Hour)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "a finished batch job goes whole after the job threshold", setup: func(w *world) {
			w.job("b", batch, 10*time.Hour)
			w.eval("e1", "b", batch, complete, 5*time.Hour)
			w.alloc("a1", "b", "e1", "complete", 5*time.Hour)
			w.alloc("a2", "b", "e1", "failed,replaced", 6*time.Hour)
		}, want: "evals=[e1] allocs=[a1 a2] jobs=[b] nodes=[]"},
		{name: "a finished batch job waits for the job threshold", setup: func(w *world) {
			w.job("b", batch, 10*time.Hour)
			w.eval("e1", "b", batch, complete, 3*time.Hour)
			w.alloc("a1", "b", "e1", "complete", 3*time.Hour)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "stopped job purged after the job threshold", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 5*time.Hour)
			w.alloc("a1", "web", "e1", "stop,complete", 5*time.Hour)
			w.stop("web", 5*time.Hour)
		}, want: "evals=[e1] allocs=[a1] jobs=[web] nodes=[]"},
		{name: "recently stopped job stays, its old evaluations go", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 5*time.Hour)
			w.alloc("a1", "web", "e1", "stop,complete", 5*time.Hour)
			w.stop("web", time.Hour)
		}, want: "evals=[e1] allocs=[a1] jobs=[] nodes=[]"},
		{name: "stopped job with work still running stays", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 5*time.Hour)
			w.alloc("a1", "web", "e1", "stop,running", 5*time.Hour)
			w.stop("web", 5*time.Hour)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[]"},
		{name: "evaluation of a purged job", setup: func(w *world) {
			w.job("gone", svc, 10*time.Hour)
			w.eval("e1", "gone", svc, complete, 2*time.Hour)
			w.alloc("a1", "gone", "e1", "failed", 2*time.Hour)
			w.check(w.st.DeregisterJob(w.next(), structs.DefaultNamespace, "gone", true, 0, nil))
		}, want: "evals=[e1] allocs=[a1] jobs=[] nodes=[]"},
		{name: "down nodes", setup: func(w *world) {
			w.addNode("old", structs.NodeStatusDown, 25*time.Hour)
			w.addNode("recent", structs.NodeStatusDown, time.Hour)
			w.addNode("ready", structs.NodeStatusReady, 25*time.Hour)
			busy := w.addNode("busy", structs.NodeStatusDown, 25*time.Hour)
			w.job("web", svc, 10*time.Hour)
			w.node = busy
			w.eval("e1", "web", svc, complete, 30*time.Minute)
			w.alloc("a1", "web", "e1", "running", 30*time.Minute)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[old]"},
		{name: "deployments: terminal, old and with no live allocation", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 30*time.Minute)
			w.deployment("d-ok", "web", structs.DeploymentStatusSuccessful, 2*time.Hour)
			w.deployment("d-failed", "web", structs.DeploymentStatusFailed, 2*time.Hour)
			w.deployment("d-cancelled", "web", structs.DeploymentStatusCancelled, 2*time.Hour)
			w.deployment("d-young", "web", structs.DeploymentStatusSuccessful, 30*time.Minute)
			w.deployment("d-running", "web", structs.DeploymentStatusRunning, 2*time.Hour)
			w.deployment("d-paused", "web", structs.DeploymentStatusPaused, 2*time.Hour)
			// The latest one: its allocations run, so it stays.
			w.deployment("d-live", "web", structs.DeploymentStatusSuccessful, 2*time.Hour)
			w.alloc("a1", "web", "e1", "running,dep:d-live", 30*time.Minute)
			w.alloc("a2", "web", "e1", "stop,complete,dep:d-live", 30*time.Minute)
			// Only stopped allocations name it: it goes (as in Nomad).
			w.alloc("a3", "web", "e1", "stop,complete,dep:d-ok", 30*time.Minute)
		}, want: "evals=[] allocs=[] jobs=[] nodes=[] deployments=[d-cancelled d-failed d-ok]"},
		{name: "deployments of a purged job go with it", setup: func(w *world) {
			w.job("web", svc, 10*time.Hour)
			w.eval("e1", "web", svc, complete, 5*time.Hour)
			w.alloc("a1", "web", "e1", "stop,complete,dep:d1", 5*time.Hour)
			w.deployment("d1", "web", structs.DeploymentStatusCancelled, 30*time.Minute)
			w.stop("web", 5*time.Hour)
			w.job("gone", svc, 10*time.Hour)
			w.deployment("d2", "gone", structs.DeploymentStatusRunning, time.Minute)
			w.check(w.st.DeregisterJob(w.next(), structs.DefaultNamespace, "gone", true, 0, nil))
		}, want: "evals=[e1] allocs=[a1] jobs=[web] nodes=[] deployments=[d1 d2]"},
		{name: "forced: everything terminal, whatever its age", setup: func(w *world) {
			w.job("web", svc, time.Minute)
			w.eval("e1", "web", svc, complete, time.Second)
			w.alloc("a1", "web", "e1", "stop,complete", time.Second)
			w.eval("e2", "web", svc, complete, time.Second)
			w.alloc("a2", "web", "e2", "running", time.Second)
			w.job("done", svc, time.Minute)
			w.eval("e3", "done", svc, complete, time.Second)
			w.alloc("a3", "done", "e3", "stop,complete", time.Second)
			w.stop("done", time.Second)
			w.addNode("down", structs.NodeStatusDown, time.Second)
			w.deployment("d1", "web", structs.DeploymentStatusSuccessful, time.Second)
			w.deployment("d2", "web", structs.DeploymentStatusRunning, time.Second)
		}, force: true, want: "evals=[e1 e3] allocs=[a1 a3] jobs=[done] nodes=[down] deployments=[d1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			th := DefaultThresholds()
			if tc.force {
				th = Force
			}
			g, err := Find(w.st, t0, th)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.String(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

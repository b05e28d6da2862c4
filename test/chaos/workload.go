package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// opTimeout bounds each workload request: a request to a paused or cut
// off server ends as unknown after it.
const opTimeout = 5 * time.Second

// Workload is the concurrent writers of a run: each picks a job and an
// operation and a server at random (from the run's seed) and records the
// operation with its invoke and complete times and outcome.
type Workload struct {
	Cluster *Cluster
	History *History
	Writers int
	Keys    []string
	Seed    int64
	// Pace is the pause between one writer's operations.
	Pace time.Duration
}

// seen is what one writer last knew of a job: its value and modify index,
// the condition of its next scale.
type seen struct {
	val   string
	index uint64
}

// Run runs the writers until ctx ends and waits for their last requests.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	clients := make([]*api.Client, len(w.Cluster.Servers))
	for i, s := range w.Cluster.Servers {
		clients[i] = APIClient(s, opTimeout)
	}
	for i := 0; i < w.Writers; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(w.Seed*1000 + int64(id)))
			known := map[string]seen{}
			seq := 0
			for ctx.Err() == nil {
				srv := rng.Intn(len(clients))
				key := w.Keys[rng.Intn(len(w.Keys))]
				seq++
				w.one(id, srv, clients[srv], key, rng, known, fmt.Sprintf("w%d-%d", id, seq))
				select {
				case <-ctx.Done():
				case <-time.After(w.Pace):
				}
			}
		}(i)
	}
	// One probe per server: it registers its own job through that server
	// only, so the first write each server acknowledges after a fault is
	// seen even while the writers wait on a paused one.
	for i, s := range w.Cluster.Servers {
		wg.Add(1)
		go func(i int, name string) {
			defer wg.Done()
			key := "probe-" + name
			for seq := 1; ctx.Err() == nil; seq++ {
				op := Op{Client: w.Writers + 1 + i, Server: name, Key: key, Kind: OpRegister, Val: fmt.Sprintf("%s-%d", key, seq), Count: 0}
				op.Call = w.History.Now()
				_, _, err := clients[i].Jobs().Register(workloadJob(key, op.Val, 0), nil)
				op.Return = w.History.Now()
				classify(&op, err)
				w.History.Add(op)
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}(i, s.Name)
	}
	wg.Wait()
}

// one runs and records one operation.
func (w *Workload) one(id, srv int, cl *api.Client, key string, rng *rand.Rand, known map[string]seen, val string) {
	op := Op{Client: id, Server: w.Cluster.Servers[srv].Name, Key: key}
	p := rng.Intn(100)
	k, haveSeen := known[key]
	switch {
	case p < 35 || (p >= 70 && p < 90 && !haveSeen):
		op.Kind = OpRead // a scale needs a value read first
	case p < 70:
		op.Kind, op.Val, op.Count = OpRegister, val, rng.Intn(3)
	case p < 90:
		op.Kind, op.Expect, op.Count = OpScale, k.val, rng.Intn(3)
	default:
		op.Kind = OpDeregister
	}
	op.Call = w.History.Now()
	var err error
	switch op.Kind {
	case OpRead:
		var job *api.Job
		job, _, err = cl.Jobs().Info(key, nil)
		if err == nil {
			op.Exists, op.ReadVal, op.ReadCount = true, job.Meta["w"], *job.TaskGroups[0].Count
			known[key] = seen{val: op.ReadVal, index: *job.JobModifyIndex}
		} else {
			delete(known, key)
		}
	case OpRegister:
		_, _, err = cl.Jobs().Register(workloadJob(key, val, op.Count), nil)
		delete(known, key) // its modify index is not in the answer's job
	case OpScale:
		c := int64(op.Count)
		_, _, err = cl.Jobs().ScaleWithRequest(key, &api.ScalingRequest{
			Count:          &c,
			Target:         map[string]string{"Job": key, "Group": "g"},
			JobModifyIndex: k.index,
			Message:        "chaos",
		}, nil)
		delete(known, key)
	case OpDeregister:
		_, _, err = cl.Jobs().Deregister(key, true, nil)
		delete(known, key)
	}
	op.Return = w.History.Now()
	classify(&op, err)
	w.History.Add(op)
}

// workloadJob is a service job of one group running the mock driver (no
// process: the workload measures the control plane), with its value in
// its meta.
func workloadJob(id, val string, count int) *api.Job {
	return &api.Job{
		ID: &id, Name: &id, Type: ptr("service"), Datacenters: []string{"dc1"},
		Meta: map[string]string{"w": val},
		TaskGroups: []*api.TaskGroup{{
			Name: ptr("g"), Count: &count,
			Tasks: []*api.Task{{
				Name: "t", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &api.Resources{CPU: ptr(10), MemoryMB: ptr(10)},
			}},
		}},
	}
}

func ptr[T any](v T) *T { return &v }

// Sentinel is a count=1 raw_exec service job whose process carries a
// marker in its argv, so the sampler can count its copies in /proc.
type Sentinel struct {
	ID     string
	Marker string
	Count  int
	// StopAfter is the group's stop_after_client_disconnect (fenced
	// mode); zero is Nomad's default settings.
	StopAfter time.Duration
	// Strict makes any second of more copies than Count a failure; else
	// the overlap is measured and reported.
	Strict bool
}

// Job is the sentinel's job, preferring to run on node prefer.
func (s Sentinel) Job(prefer string) *api.Job {
	tg := &api.TaskGroup{
		Name: ptr("g"), Count: ptr(s.Count),
		Tasks: []*api.Task{{
			Name: "t", Driver: "raw_exec",
			Config: map[string]any{
				"command": "/bin/sh",
				"args":    []string{"-c", "while :; do sleep 1; done", s.Marker},
			},
			KillTimeout: ptr(time.Second),
			Resources:   &api.Resources{CPU: ptr(20), MemoryMB: ptr(20)},
		}},
		Affinities: []*api.Affinity{{LTarget: "${node.unique.name}", RTarget: prefer, Operand: "=", Weight: ptr(int8(100))}},
	}
	if s.StopAfter > 0 {
		tg.StopAfterClientDisconnect = ptr(s.StopAfter)
	}
	return &api.Job{ID: &s.ID, Name: &s.ID, Type: ptr("service"), Datacenters: []string{"dc1"}, TaskGroups: []*api.TaskGroup{tg}}
}

package agent

import (
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	nomad "github.com/hashicorp/nomad/api"
)

// nomadJob builds a job with Nomad's own client types and canonicalizes it
// as tools built on Nomad's Go client do (Nomad's CLI does not), so the
// JSON carries Nomad's defaults for blocks Drover does not model (update,
// ephemeral disk, logs, a task restart policy equal to the group's), which
// Drover takes as absent.
func nomadJob(id string) *nomad.Job {
	task := nomad.NewTask("t", "raw_exec").
		SetConfig("command", "/bin/sleep").
		SetConfig("args", []string{"60"}).
		Require(&nomad.Resources{CPU: new(200), MemoryMB: new(64)})
	kill := 3 * time.Second
	task.KillTimeout = &kill
	task.Env = map[string]string{"A": "1"}
	tg := nomad.NewTaskGroup("g", 2).AddTask(task)
	tg.Constraints = []*nomad.Constraint{nomad.NewConstraint("${attr.kernel.name}", "=", "linux")}
	job := nomad.NewServiceJob(id, id, "global", 60).AddTaskGroup(tg)
	job.Datacenters = []string{"dc1"}
	job.Meta = map[string]string{"team": "a"}
	job.Canonicalize()
	return job
}

// exerciseNomadClient drives the endpoints Nomad's client uses against
// the agent at addr: register, info, list, deregister, nodes, status,
// raft configuration.
func exerciseNomadClient(t *testing.T, addr string) {
	t.Helper()
	cfg := nomad.DefaultConfig()
	cfg.Address = addr
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	leader, err := c.Status().Leader()
	if err != nil || leader == "" {
		t.Fatalf("Status.Leader = %q, %v", leader, err)
	}
	peers, err := c.Status().Peers()
	if err != nil || len(peers) == 0 || peers[0] != leader {
		t.Fatalf("Status.Peers = %v, %v (leader %s)", peers, err, leader)
	}
	rc, err := c.Operator().RaftGetConfiguration(nil)
	if err != nil || len(rc.Servers) != 1 || !rc.Servers[0].Leader || !rc.Servers[0].Voter || rc.Servers[0].Address != leader {
		t.Fatalf("RaftGetConfiguration = %+v, %v", rc, err)
	}

	resp, wm, err := c.Jobs().Register(nomadJob("web"), nil)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if resp.EvalID == "" || resp.JobModifyIndex == 0 || wm.LastIndex == 0 {
		t.Fatalf("Register response = %+v, meta %+v", resp, wm)
	}

	job, qm, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if qm.LastIndex == 0 || !qm.KnownLeader {
		t.Errorf("Info meta = %+v", qm)
	}
	task := job.TaskGroups[0].Tasks[0]
	switch {
	case *job.ID != "web" || *job.Type != "service" || *job.Priority != 60 || *job.Namespace != "default":
		t.Fatalf("Info job = %+v", job)
	case *job.TaskGroups[0].Count != 2 || len(job.TaskGroups[0].Constraints) != 1:
		t.Fatalf("Info group = %+v", job.TaskGroups[0])
	case task.Driver != "raw_exec" || *task.KillTimeout != 3*time.Second || *task.Resources.CPU != 200 ||
		*task.Resources.MemoryMB != 64 || task.Env["A"] != "1" || task.Config["command"] != "/bin/sleep":
		t.Fatalf("Info task = %+v resources %+v", task, task.Resources)
	case job.Meta["team"] != "a" || *job.JobModifyIndex != resp.JobModifyIndex:
		t.Fatalf("Info job meta/index = %+v", job)
	}

	if _, _, err := c.Jobs().Register(nomadJob("api"), nil); err != nil {
		t.Fatalf("Register second: %v", err)
	}
	list, _, err := c.Jobs().List(nil)
	if err != nil || len(list) != 2 || list[0].ID != "api" || list[1].ID != "web" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	list, _, err = c.Jobs().PrefixList("we")
	if err != nil || len(list) != 1 || list[0].ID != "web" {
		t.Fatalf("PrefixList = %+v, %v", list, err)
	}

	// A job that fails validation comes back as a 400 naming the field.
	bad := nomadJob("bad")
	bad.TaskGroups[0].Tasks[0].Driver = ""
	_, _, err = c.Jobs().Register(bad, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Driver") {
		t.Fatalf("invalid Register err = %v", err)
	}

	evalID, _, err := c.Jobs().Deregister("web", true, nil)
	if err != nil || evalID == "" {
		t.Fatalf("Deregister = %q, %v", evalID, err)
	}
	if _, _, err := c.Jobs().Info("web", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Info after purge err = %v", err)
	}

	nodes, _, err := c.Nodes().List(nil)
	if err != nil || nodes == nil {
		t.Fatalf("Nodes.List = %v, %v", nodes, err)
	}
}

// memFake is a fake server with just enough job state to run the Nomad
// client exercise without a real cluster.
type memFake struct {
	*fakeServer
	mu    sync.Mutex
	jobs  map[string]*structs.Job // guarded by mu
	index uint64                  // guarded by mu
}

func newMemFake() *memFake {
	m := &memFake{fakeServer: newFake(), jobs: map[string]*structs.Job{}}
	leader := m.leader
	meta := func() structs.QueryMeta { return structs.QueryMeta{Index: m.index, KnownLeader: true} }
	m.on("Status.Leader", func(_, reply any) error { *reply.(*string) = leader; return nil })
	m.on("Status.Peers", func(_, reply any) error { *reply.(*[]string) = []string{leader}; return nil })
	m.on("Operator.RaftGetConfiguration", func(_, reply any) error {
		*reply.(*structs.RaftConfigurationResponse) = structs.RaftConfigurationResponse{Index: 1,
			Servers: []*structs.RaftServer{{ID: "id1", Node: "n1", Address: leader, Leader: true, Voter: true, RaftProtocol: "3"}}}
		return nil
	})
	m.on("Job.Register", func(args, reply any) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		job := args.(*structs.JobRegisterRequest).Job
		job.Canonicalize()
		if err := job.Validate(); err != nil {
			return err
		}
		m.index++
		job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = m.index, m.index, m.index
		m.jobs[job.ID] = job
		*reply.(*structs.JobRegisterResponse) = structs.JobRegisterResponse{EvalID: structs.GenerateUUID(),
			EvalCreateIndex: m.index, JobModifyIndex: m.index, QueryMeta: meta()}
		return nil
	})
	m.on("Job.GetJob", func(args, reply any) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		*reply.(*structs.SingleJobResponse) = structs.SingleJobResponse{Job: m.jobs[args.(*structs.JobSpecificRequest).JobID], QueryMeta: meta()}
		return nil
	})
	m.on("Job.List", func(args, reply any) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		out := reply.(*structs.JobListResponse)
		for id, j := range m.jobs {
			if strings.HasPrefix(id, args.(*structs.JobListRequest).Prefix) {
				out.Jobs = append(out.Jobs, j.Stub(nil))
			}
		}
		sort.Slice(out.Jobs, func(i, k int) bool { return out.Jobs[i].ID < out.Jobs[k].ID })
		out.QueryMeta = meta()
		return nil
	})
	m.on("Job.Deregister", func(args, reply any) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.index++
		delete(m.jobs, args.(*structs.JobDeregisterRequest).JobID)
		*reply.(*structs.JobDeregisterResponse) = structs.JobDeregisterResponse{EvalID: structs.GenerateUUID(), QueryMeta: meta()}
		return nil
	})
	m.on("Node.List", func(_, reply any) error {
		reply.(*structs.NodeListResponse).QueryMeta = meta()
		return nil
	})
	return m
}

func TestNomadClientAgainstFake(t *testing.T) {
	ts := httptest.NewServer(testHandler(newMemFake().fakeServer))
	defer ts.Close()
	exerciseNomadClient(t, ts.URL)
}

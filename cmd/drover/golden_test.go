package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// Fixture IDs: full UUIDs so that short IDs show.
const (
	evalID    = "5c3c4c5e-1111-4a4a-8b8b-000000000001"
	blockedID = "b10cced0-2222-4a4a-8b8b-000000000002"
	node1ID   = "0e2b3d4f-aaaa-4a4a-8b8b-000000000010"
	node2ID   = "7a1c9e2d-bbbb-4a4a-8b8b-000000000020"
	alloc1ID  = "a1a1a1a1-0000-4a4a-8b8b-000000000101"
	alloc2ID  = "a2a2a2a2-0000-4a4a-8b8b-000000000102"
	alloc3ID  = "a3a3a3a3-0000-4a4a-8b8b-000000000103"
)

func ago(d time.Duration) int64 { return testNow.Add(-d).UnixNano() }

func fixtureJob() *structs.Job {
	return &structs.Job{
		ID: "web", Name: "web", Namespace: "default", Region: "global", Type: "service", Priority: 50,
		Datacenters: []string{"dc1"}, Status: "running", SubmitTime: ago(90 * time.Minute),
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 3, Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec",
			Config: map[string]any{"command": "/bin/sh"}, Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}},
		CreateIndex: 10, ModifyIndex: 10, JobModifyIndex: 10,
	}
}

func fixtureAllocs() []*structs.Allocation {
	job := fixtureJob()
	mk := func(id, node, nodeName string, idx int, created time.Duration) *structs.Allocation {
		return &structs.Allocation{
			ID: id, EvalID: evalID, Name: fmt.Sprintf("web.web[%d]", idx), Namespace: "default",
			NodeID: node, NodeName: nodeName, JobID: "web", Job: job, TaskGroup: "web",
			DesiredStatus: "run", ClientStatus: "running", ClientDescription: "Tasks are running",
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
				"server": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}}},
			CreateIndex: uint64(11 + idx), ModifyIndex: uint64(14 + idx),
			CreateTime: ago(created), ModifyTime: ago(created - 5*time.Second),
		}
	}
	a1 := mk(alloc1ID, node1ID, "node-1", 0, 80*time.Minute)
	a1.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"server": {
		State: "running", StartedAt: testNow.Add(-79 * time.Minute),
		Events: []*structs.TaskEvent{
			{Type: structs.TaskReceived, Time: ago(80 * time.Minute), DisplayMessage: "Task received by client"},
			{Type: structs.TaskStarted, Time: ago(79 * time.Minute), DisplayMessage: "Task started by client"},
		},
	}})
	return []*structs.Allocation{a1, mk(alloc2ID, node2ID, "node-2", 1, 80*time.Minute), mk(alloc3ID, node1ID, "node-1", 2, 2*time.Minute)}
}

// templateEventsAlloc is a with the events a task whose template waited
// for a variable, then re-rendered, records (Nomad's types and texts).
func templateEventsAlloc(a *structs.Allocation) *structs.Allocation {
	c := *a
	c.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"server": {
		State: "running", StartedAt: testNow.Add(-70 * time.Minute), Restarts: 1, LastRestart: testNow.Add(-70 * time.Minute),
		Events: []*structs.TaskEvent{
			{Type: structs.TaskReceived, Time: ago(80 * time.Minute), DisplayMessage: "Task received by client"},
			{Type: structs.TaskTemplate, Time: ago(79 * time.Minute), DisplayMessage: "Missing: nomad.var.block(nomad/jobs/web@default.global)"},
			{Type: structs.TaskStarted, Time: ago(78 * time.Minute), DisplayMessage: "Task started by client"},
			{Type: structs.TaskSignaling, Time: ago(75 * time.Minute), DisplayMessage: "Template re-rendered", TaskSignal: "SIGHUP"},
			{Type: structs.TaskRestartSignal, Time: ago(71 * time.Minute), DisplayMessage: "Template with change_mode restart re-rendered"},
			{Type: structs.TaskTerminated, Time: ago(71 * time.Minute), DisplayMessage: "Exit Code: 130, Signal: 2"},
			{Type: structs.TaskRestarting, Time: ago(71 * time.Minute), DisplayMessage: "Task restarting in 0s"},
			{Type: structs.TaskStarted, Time: ago(70 * time.Minute), DisplayMessage: "Task started by client"},
		},
	}})
	return &c
}

// editedJob is fixtureJob with a changed count and command.
func editedJob() *structs.Job {
	j := fixtureJob()
	j.TaskGroups[0].Count = 4
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/bash", "args": []any{"-c", "sleep 60"}}
	j.Meta = map[string]string{"owner": "ops"}
	return j
}

// planDiff is the diff a plan from old to new answers, with the group's
// update counts and the task's annotation.
func planDiff(old, new *structs.Job, updates map[string]uint64, taskAnnotation string) *structs.JobDiff {
	d, err := old.Diff(new, true)
	if err != nil {
		panic(err)
	}
	g := d.TaskGroups[0]
	g.Updates = updates
	if taskAnnotation != "" {
		g.Tasks[0].Annotations = []string{taskAnnotation}
	}
	for _, f := range g.Fields {
		if f.Name == "Count" {
			f.Annotations = []string{"forces create"}
		}
	}
	return d
}

// versionsRoute answers GET /v1/job/web/versions: versions 1 (stable)
// and 0 of the job, with the diff between them when diffs.
func versionsRoute(diffs bool) structs.JobVersionsResponse {
	v0, v1 := fixtureJob(), editedJob()
	v1.Version, v1.Stable, v1.SubmitTime = 1, true, ago(5*time.Minute)
	out := structs.JobVersionsResponse{Versions: []*structs.Job{v1, v0}}
	if diffs {
		d, err := v0.Diff(v1, true)
		if err != nil {
			panic(err)
		}
		out.Diffs = []*structs.JobDiff{d}
	}
	return out
}

func stubs(allocs []*structs.Allocation) []*structs.AllocListStub {
	out := make([]*structs.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, a.Stub())
	}
	return out
}

func fixtureNodes() []*structs.Node {
	mk := func(id, name string) *structs.Node {
		return &structs.Node{
			ID: id, Name: name, Datacenter: "dc1", NodePool: "default", Status: "ready",
			SchedulingEligibility: "eligible",
			Attributes:            map[string]string{"unique.network.ip-address": "10.0.0.1", "kernel.name": "linux"},
			NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000},
				Memory: structs.NodeMemoryResources{MemoryMB: 8192}, Disk: structs.NodeDiskResources{DiskMB: 51200}},
			ReservedResources: &structs.NodeReservedResources{Memory: structs.NodeReservedMemoryResources{MemoryMB: 256}},
			Drivers:           map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
			Events: []*structs.NodeEvent{{Message: "Node registered", Subsystem: "Cluster",
				Timestamp: testNow.Add(-2 * time.Hour)}},
		}
	}
	return []*structs.Node{mk(node1ID, "node-1"), mk(node2ID, "node-2")}
}

// withScores is a with the placement metrics of a group with a spread:
// the best nodes' scores under Nomad's names.
func withScores(a *structs.Allocation) *structs.Allocation {
	c := a.Copy()
	c.Metrics = &structs.AllocMetric{NodesEvaluated: 3, NodesFiltered: 1, NodesAvailable: map[string]int{"dc1": 2, "dc2": 1},
		ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 1}, AllocationTime: 120 * time.Microsecond,
		ScoreMetaData: []*structs.NodeScoreMeta{
			{NodeID: node1ID, NormScore: 0.612, Scores: map[string]float64{"binpack": 0.224, "job-anti-affinity": 0,
				"node-reschedule-penalty": 0, "allocation-spread": 1}},
			{NodeID: node2ID, NormScore: -0.25, Scores: map[string]float64{"binpack": 0.5, "job-anti-affinity": -0.5,
				"node-reschedule-penalty": 0, "allocation-spread": -1}},
		}}
	return c
}

func failedMetric() *structs.AllocMetric {
	return &structs.AllocMetric{
		NodesEvaluated: 8, NodesFiltered: 5, NodesExhausted: 3, NodesAvailable: map[string]int{"dc1": 8},
		ConstraintFiltered: map[string]int{"${attr.kernel.name} = windows": 5},
		DimensionExhausted: map[string]int{"memory": 3}, CoalescedFailures: 2,
	}
}

// sequence answers with each value in turn, then repeats the last; each
// value is sent as JSON with X-Nomad-Index set to index+position.
func sequence(index uint64, values ...any) http.HandlerFunc {
	var mu sync.Mutex
	n := 0
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := min(n, len(values)-1)
		n++
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", fmt.Sprint(index+uint64(i)))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(values[i])
	}
}

// prefixed answers list requests filtered by ?prefix=, as the agent does.
func prefixed[T any](items []T, id func(T) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out := []T{}
		for _, it := range items {
			if strings.HasPrefix(id(it), r.URL.Query().Get("prefix")) {
				out = append(out, it)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Error(w, body, code) }
}

func TestCLIGolden(t *testing.T) {
	job := fixtureJob()
	allocs := fixtureAllocs()
	nodes := fixtureNodes()
	jobStubs := []*structs.JobListStub{job.Stub(nil), {ID: "web-canary", Name: "web-canary", Namespace: "default",
		Type: "batch", Priority: 70, Status: "dead", Stop: true, SubmitTime: ago(time.Hour)}}
	pending := &structs.Evaluation{ID: evalID, Namespace: "default", Priority: 50, Type: "service",
		TriggeredBy: "job-register", JobID: "web", Status: "pending", CreateTime: ago(time.Second), ModifyTime: ago(time.Second)}
	complete := *pending
	complete.Status = "complete"
	failed := complete
	failed.FailedTGAllocs = map[string]*structs.AllocMetric{"web": failedMetric()}
	failed.BlockedEval = blockedID
	registered := structs.JobRegisterResponse{EvalID: evalID, EvalCreateIndex: 10, JobModifyIndex: 10}
	nodeStubs := []*structs.NodeListStub{nodes[0].Stub(), nodes[1].Stub()}
	jobsRoute := prefixed(jobStubs, func(j *structs.JobListStub) string { return j.ID })
	pendingAllocs := make([]*structs.Allocation, len(allocs))
	for i, a := range allocs {
		pendingAllocs[i] = withStatus(a, "pending")
		pendingAllocs[i].TaskStates = structs.TaskStates{}
	}
	restarting, startFailed := startFailureAllocs(allocs)
	withServices := allocs[0].Copy()
	withServices.Job = withServices.Job.Copy()
	withServices.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "http"}}
	checkResults := map[string]*structs.CheckQueryResult{
		"c2": {ID: "c2", Mode: "healthiness", Status: "failure", Group: "web", Task: "server", Service: "api", Check: "script"},
		"c1": {ID: "c1", Mode: "healthiness", Status: "success", StatusCode: 200, Group: "web", Service: "web", Check: "alive"},
	}
	svcList := []*structs.ServiceRegistrationListStub{{Namespace: "default", Services: []*structs.ServiceRegistrationStub{
		{ServiceName: "web", Tags: []string{"v1", "blue"}}, {ServiceName: "worker", Tags: []string{}}}}}
	svcRegs := []*structs.ServiceRegistration{
		{ID: "_nomad-task-" + allocs[1].ID + "-group-web-web-http", ServiceName: "web", Namespace: "default",
			NodeID: allocs[1].NodeID, Datacenter: "dc1", JobID: "web", AllocID: allocs[1].ID, Tags: []string{"v1", "blue"},
			Address: "10.0.0.2", Port: 23456, CreateIndex: 30, ModifyIndex: 30},
		{ID: "_nomad-task-" + allocs[0].ID + "-group-web-web-http", ServiceName: "web", Namespace: "default",
			NodeID: allocs[0].NodeID, Datacenter: "dc1", JobID: "api", AllocID: allocs[0].ID, Tags: []string{"v1"},
			Address: "fd00::1", Port: 8080, CreateIndex: 31, ModifyIndex: 31}}

	cases := []struct {
		name     string
		args     []string
		routes   map[string]any
		stdin    string
		wantCode int
	}{
		{name: "job_run", args: []string{"job", "run", "testdata/web.nomad.hcl"}, wantCode: 0, routes: map[string]any{
			"PUT /v1/jobs":                                  registered,
			"GET /v1/evaluation/" + evalID:                  sequence(10, pending, complete),
			"GET /v1/evaluation/" + evalID + "/allocations": sequence(10, []any{}, stubs(allocs)),
			"GET /v1/job/web/allocations":                   sequence(20, stubs(pendingAllocs), stubs(allocs)),
		}},
		{name: "job_run_start_failure", args: []string{"job", "run", "testdata/web.nomad.hcl"}, wantCode: 1, routes: map[string]any{
			"PUT /v1/jobs":                                  registered,
			"GET /v1/evaluation/" + evalID:                  sequence(10, complete),
			"GET /v1/evaluation/" + evalID + "/allocations": stubs(pendingAllocs),
			"GET /v1/job/web/allocations":                   sequence(20, stubs(pendingAllocs), stubs(restarting), stubs(startFailed)),
		}},
		{name: "job_run_placement_failure", args: []string{"job", "run", "testdata/web.nomad.hcl"}, wantCode: 2, routes: map[string]any{
			"PUT /v1/jobs":                                  registered,
			"GET /v1/evaluation/" + evalID:                  sequence(10, failed),
			"GET /v1/evaluation/" + evalID + "/allocations": []any{},
		}},
		{name: "job_run_detach", args: []string{"job", "run", "-detach", "-var", "count=5", "testdata/web.nomad.hcl"},
			routes: map[string]any{"PUT /v1/jobs": registered}},
		{name: "job_run_parse_error", args: []string{"job", "run", "testdata/bad.nomad.hcl"}, wantCode: 1},
		{name: "job_run_conflict", args: []string{"job", "run", "-check-index", "3", "testdata/web.nomad.hcl"}, wantCode: 1,
			routes: map[string]any{"PUT /v1/jobs": status(409, "Enforcing job modify index 3: job exists with conflicting job modify index: 10")}},
		{name: "service_list", args: []string{"service", "list"}, routes: map[string]any{"GET /v1/services": svcList}},
		{name: "service_list_all_namespaces", args: []string{"service", "list", "-namespace", "*"},
			routes: map[string]any{"GET /v1/services": svcList}},
		{name: "service_list_none", args: []string{"service", "list"}, routes: map[string]any{"GET /v1/services": []any{}}},
		{name: "service_info", args: []string{"service", "info", "web"}, routes: map[string]any{
			"GET /v1/services": svcList, "GET /v1/service/web": svcRegs}},
		{name: "service_info_verbose", args: []string{"service", "info", "-verbose", "web"}, routes: map[string]any{
			"GET /v1/services": svcList, "GET /v1/service/web": svcRegs}},
		{name: "service_info_ambiguous", args: []string{"service", "info", "w"}, wantCode: 1, routes: map[string]any{
			"GET /v1/services": svcList}},
		{name: "service_delete", args: []string{"service", "delete", "web", svcRegs[0].ID}, routes: map[string]any{
			"DELETE /v1/service/web/" + svcRegs[0].ID: status(200, "")}},
		{name: "job_status_list", args: []string{"job", "status"}, routes: map[string]any{"GET /v1/jobs": jobStubs}},
		{name: "job_status_none", args: []string{"job", "status"}, routes: map[string]any{"GET /v1/jobs": []any{}}},
		{name: "job_status", args: []string{"job", "status", "web"}, routes: map[string]any{
			"GET /v1/jobs":                jobsRoute,
			"GET /v1/job/web":             job,
			"GET /v1/job/web/summary":     structs.JobSummary{JobID: "web", Summary: map[string]structs.TaskGroupSummary{"web": {Running: 3}}},
			"GET /v1/job/web/allocations": stubs(allocs),
		}},
		{name: "job_status_task_failure", args: []string{"job", "status", "web"}, routes: map[string]any{
			"GET /v1/jobs":                jobsRoute,
			"GET /v1/job/web":             job,
			"GET /v1/job/web/summary":     structs.JobSummary{JobID: "web", Summary: map[string]structs.TaskGroupSummary{"web": {Running: 2, Failed: 1}}},
			"GET /v1/job/web/allocations": stubs(startFailed),
		}},
		{name: "job_status_ambiguous", args: []string{"job", "status", "we"}, wantCode: 1,
			routes: map[string]any{"GET /v1/jobs": jobsRoute}},
		{name: "job_status_missing", args: []string{"job", "status", "nope"}, wantCode: 1,
			routes: map[string]any{"GET /v1/jobs": jobsRoute}},
		{name: "job_plan_changes", args: []string{"job", "plan", "testdata/web.nomad.hcl"}, wantCode: 1, routes: map[string]any{
			"PUT /v1/job/web/plan": structs.JobPlanResponse{JobModifyIndex: 0,
				Diff:        planDiff(nil, fixtureJob(), map[string]uint64{"create": 3}, "forces create"),
				Annotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{"web": {Place: 3}}}},
		}},
		{name: "job_plan_no_change", args: []string{"job", "plan", "testdata/web.nomad.hcl"}, wantCode: 0, routes: map[string]any{
			"PUT /v1/job/web/plan": structs.JobPlanResponse{JobModifyIndex: 10, Diff: planDiff(fixtureJob(), fixtureJob(), map[string]uint64{"ignore": 3}, ""),
				Annotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{"web": {Ignore: 3}}}},
		}},
		{name: "job_plan_failure", args: []string{"job", "plan", "testdata/web.nomad.hcl"}, wantCode: 1, routes: map[string]any{
			"PUT /v1/job/web/plan": structs.JobPlanResponse{JobModifyIndex: 10, Diff: planDiff(fixtureJob(), editedJob(), map[string]uint64{"create": 1, "ignore": 2}, "forces create/destroy update"),
				Annotations:    &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{"web": {Place: 1, Ignore: 2}}},
				FailedTGAllocs: map[string]*structs.AllocMetric{"web": failedMetric()}},
		}},
		{name: "job_history", args: []string{"job", "history", "web"}, routes: map[string]any{
			"GET /v1/jobs":             jobsRoute,
			"GET /v1/job/web/versions": versionsRoute(false),
		}},
		{name: "job_history_diffs", args: []string{"job", "history", "-p", "web"}, routes: map[string]any{
			"GET /v1/jobs":             jobsRoute,
			"GET /v1/job/web/versions": versionsRoute(true),
		}},
		{name: "job_history_version", args: []string{"job", "history", "-p", "-version", "1", "web"}, routes: map[string]any{
			"GET /v1/jobs":             jobsRoute,
			"GET /v1/job/web/versions": versionsRoute(true),
		}},
		{name: "job_history_missing_version", args: []string{"job", "history", "-version", "7", "web"}, wantCode: 1, routes: map[string]any{
			"GET /v1/jobs":             jobsRoute,
			"GET /v1/job/web/versions": versionsRoute(false),
		}},
		{name: "job_revert_detach", args: []string{"job", "revert", "-detach", "web", "0"}, routes: map[string]any{
			"GET /v1/jobs":           jobsRoute,
			"PUT /v1/job/web/revert": structs.JobRegisterResponse{EvalID: evalID},
		}},
		{name: "job_revert_conflict", args: []string{"job", "revert", "web", "0"}, wantCode: 1, routes: map[string]any{
			"GET /v1/jobs":           jobsRoute,
			"PUT /v1/job/web/revert": status(409, "revert request enforcing prior version 4 but job \"web\" has version 5"),
		}},
		{name: "job_scale_detach", args: []string{"job", "scale", "-detach", "web", "5"}, routes: map[string]any{
			"GET /v1/jobs":          jobsRoute,
			"GET /v1/job/web/scale": structs.JobScaleStatus{JobID: "web", TaskGroups: map[string]*structs.TaskGroupScaleStatus{"web": {Desired: 3}}},
			"PUT /v1/job/web/scale": structs.JobRegisterResponse{EvalID: evalID},
		}},
		{name: "job_scale_unknown_group", args: []string{"job", "scale", "web", "db", "5"}, wantCode: 1, routes: map[string]any{
			"GET /v1/jobs":          jobsRoute,
			"GET /v1/job/web/scale": structs.JobScaleStatus{JobID: "web", TaskGroups: map[string]*structs.TaskGroupScaleStatus{"web": {Desired: 3}}},
		}},
		{name: "job_scale_above_max", args: []string{"job", "scale", "web", "web", "50"}, wantCode: 1, routes: map[string]any{
			"GET /v1/jobs":          jobsRoute,
			"GET /v1/job/web/scale": structs.JobScaleStatus{JobID: "web", TaskGroups: map[string]*structs.TaskGroupScaleStatus{"web": {Desired: 3}}},
			"PUT /v1/job/web/scale": status(400, "Count: group count was greater than scaling policy maximum: 50 > 10"),
		}},
		{name: "job_plan_error", args: []string{"job", "plan", "testdata/web.nomad.hcl"}, wantCode: 255,
			routes: map[string]any{"PUT /v1/job/web/plan": status(500, "No cluster leader")}},
		{name: "job_stop_detach", args: []string{"job", "stop", "-detach", "web"}, routes: map[string]any{
			"GET /v1/jobs":       jobsRoute,
			"DELETE /v1/job/web": structs.JobDeregisterResponse{EvalID: evalID},
		}},
		{name: "job_stop", args: []string{"job", "stop", "-purge", "web"}, routes: map[string]any{
			"GET /v1/jobs":                                  jobsRoute,
			"DELETE /v1/job/web":                            structs.JobDeregisterResponse{EvalID: evalID},
			"GET /v1/evaluation/" + evalID:                  sequence(20, complete),
			"GET /v1/evaluation/" + evalID + "/allocations": []any{},
		}},
		{name: "node_status_list", args: []string{"node", "status"}, routes: map[string]any{"GET /v1/nodes": nodeStubs}},
		{name: "node_status", args: []string{"node", "status", "0e2"}, routes: map[string]any{
			"GET /v1/nodes":                            prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
			"GET /v1/node/" + node1ID:                  nodes[0],
			"GET /v1/node/" + node1ID + "/allocations": []*structs.Allocation{allocs[0], allocs[2]},
		}},
		{name: "node_status_verbose_host_volumes", args: []string{"node", "status", "-verbose", node1ID}, routes: map[string]any{
			"GET /v1/nodes":                            prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
			"GET /v1/node/" + node1ID:                  withHostVolumes(nodes[0]),
			"GET /v1/node/" + node1ID + "/allocations": []*structs.Allocation{},
		}},
		{name: "node_status_initializing", args: []string{"node", "status", node1ID}, routes: map[string]any{
			"GET /v1/nodes":                            prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
			"GET /v1/node/" + node1ID:                  initializing(nodes[0]),
			"GET /v1/node/" + node1ID + "/allocations": []*structs.Allocation{},
		}},
		{name: "node_drain", args: []string{"node", "drain", "-enable", "-deadline", "10m", "-detach", "-yes", "0e2"}, routes: map[string]any{
			"GET /v1/nodes":                      prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
			"PUT /v1/node/" + node1ID + "/drain": structs.NodeUpdateHTTPResponse{NodeModifyIndex: 30},
		}},
		{name: "node_drain_declined", args: []string{"node", "drain", "-disable", "0e2"}, stdin: "n\n", wantCode: 1, routes: map[string]any{
			"GET /v1/nodes": prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
		}},
		{name: "node_drain_monitor", args: []string{"node", "drain", "-enable", "-yes", "7a1"}, routes: map[string]any{
			"GET /v1/nodes":                      prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
			"PUT /v1/node/" + node2ID + "/drain": structs.NodeUpdateHTTPResponse{NodeModifyIndex: 30},
			"GET /v1/node/" + node2ID + "/allocations": sequence(30, []*structs.Allocation{allocs[1]},
				[]*structs.Allocation{withStatus(allocs[1], "complete")}),
		}},
		{name: "node_eligibility", args: []string{"node", "eligibility", "-disable", "7a1"}, routes: map[string]any{
			"GET /v1/nodes": prefixed(nodeStubs, func(n *structs.NodeListStub) string { return n.ID }),
			"PUT /v1/node/" + node2ID + "/eligibility": structs.NodeUpdateHTTPResponse{NodeModifyIndex: 31},
		}},
		{name: "alloc_status", args: []string{"alloc", "status", "a1a1"}, routes: map[string]any{
			"GET /v1/allocations":            prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"GET /v1/allocation/" + alloc1ID: allocs[0],
		}},
		{name: "alloc_status_checks", args: []string{"alloc", "status", "a1a1"}, routes: map[string]any{
			"GET /v1/allocations":                               prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"GET /v1/allocation/" + alloc1ID:                    withServices,
			"GET /v1/client/allocation/" + alloc1ID + "/checks": checkResults,
		}},
		{name: "alloc_status_template_events", args: []string{"alloc", "status", "a1a1"}, routes: map[string]any{
			"GET /v1/allocations":            prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"GET /v1/allocation/" + alloc1ID: templateEventsAlloc(allocs[0]),
		}},
		{name: "alloc_status_verbose_scores", args: []string{"alloc", "status", "-verbose", "a1a1"}, routes: map[string]any{
			"GET /v1/allocations":            prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"GET /v1/allocation/" + alloc1ID: withScores(allocs[0]),
		}},
		{name: "alloc_status_short_prefix", args: []string{"alloc", "status", "a"}, wantCode: 1},
		{name: "alloc_stop", args: []string{"alloc", "stop", "a2a2"}, routes: map[string]any{
			"GET /v1/allocations":                           prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"PUT /v1/allocation/" + alloc2ID + "/stop":      structs.AllocStopResponse{EvalID: evalID, Index: 40},
			"GET /v1/evaluation/" + evalID:                  sequence(40, complete),
			"GET /v1/evaluation/" + evalID + "/allocations": []any{},
		}},
		{name: "alloc_logs", args: []string{"alloc", "logs", "-stderr", "a1a1"}, routes: map[string]any{
			"GET /v1/allocations":                prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"GET /v1/allocation/" + alloc1ID:     allocs[0],
			"GET /v1/node/" + node1ID:            nodes[0],
			"GET /v1/client/fs/logs/" + alloc1ID: logRoute("starting\nlistening on :8080\nready\n"),
		}},
		{name: "alloc_logs_tail", args: []string{"alloc", "logs", "-tail", "-n", "2", "a1a1", "server"}, routes: map[string]any{
			"GET /v1/allocations":                prefixed(stubs(allocs), func(a *structs.AllocListStub) string { return a.ID }),
			"GET /v1/allocation/" + alloc1ID:     allocs[0],
			"GET /v1/node/" + node1ID:            nodes[0],
			"GET /v1/client/fs/logs/" + alloc1ID: logRoute("starting\nlistening on :8080\nready\n"),
		}},
		{name: "eval_status_failed", args: []string{"eval", "status", "5c3c"}, routes: map[string]any{
			"GET /v1/evaluations":          prefixed([]*structs.Evaluation{&failed}, func(e *structs.Evaluation) string { return e.ID }),
			"GET /v1/evaluation/" + evalID: &failed,
		}},
		{name: "eval_list", args: []string{"eval", "list"}, routes: map[string]any{
			"GET /v1/evaluations": func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Nomad-NextToken", "c0ffee00")
					_ = json.NewEncoder(w).Encode([]*structs.Evaluation{&failed, &complete})
				}
			}(),
		}},
		{name: "server_members", args: []string{"server", "members"}, routes: map[string]any{
			"GET /v1/agent/members": structs.AgentMembersResponse{Members: []*structs.AgentMember{
				{Name: "s2.global", Addr: "10.0.0.2", Port: 4647, Status: "alive", Tags: map[string]string{"leader": "false", "raft_vsn": "3", "build": "0.1.0", "dc": "dc1", "region": "global"}},
				{Name: "s1.global", Addr: "10.0.0.1", Port: 4647, Status: "alive", Tags: map[string]string{"leader": "true", "raft_vsn": "3", "build": "0.1.0", "dc": "dc1", "region": "global"}},
			}},
		}},
		{name: "system_gc", args: []string{"system", "gc"}, routes: map[string]any{"PUT /v1/system/gc": struct{}{}}},
		{name: "agent_unreachable", args: []string{"job", "status", "-address", "http://127.0.0.1:1"}, wantCode: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := fakeAgent(t, tc.routes)
			e, out, errOut := testEnv(map[string]string{"DROVER_ADDR": ts.URL})
			e.stdin = strings.NewReader(tc.stdin)
			code := run(tc.args, e)
			got := fmt.Sprintf("$ drover %s\nexit: %d\n--- stdout\n%s--- stderr\n%s",
				strings.Join(tc.args, " "), code, out, strings.ReplaceAll(errOut.String(), ts.URL, "$ADDR"))
			if code != tc.wantCode {
				t.Errorf("exit = %d; want %d", code, tc.wantCode)
			}
			checkGolden(t, filepath.Join("testdata", "golden", tc.name+".txt"), got)
		})
	}
}

// logRoute serves a log as the agent does with plain=true, echoing the
// query it was asked with on the first line.
func logRoute(log string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		fmt.Fprintf(w, "[task=%s type=%s origin=%s offset=%s follow=%s]\n", q.Get("task"), q.Get("type"),
			q.Get("origin"), q.Get("offset"), q.Get("follow"))
		_, _ = io.WriteString(w, log)
	}
}

// startFailureAllocs returns allocs with the first one's task failing to
// start: restarting after a Driver Failure, then failed.
func startFailureAllocs(allocs []*structs.Allocation) (restarting, failed []*structs.Allocation) {
	events := []*structs.TaskEvent{
		{Type: structs.TaskReceived, Time: ago(2 * time.Second), DisplayMessage: "Task received by client"},
		{Type: structs.TaskSetup, Time: ago(2 * time.Second), DisplayMessage: "Building Task Directory"},
		{Type: structs.TaskDriverFailure, Time: ago(2 * time.Second),
			DisplayMessage: "Failed to start task: fork/exec /bin/nope: no such file or directory",
			DriverError:    "fork/exec /bin/nope: no such file or directory"},
		{Type: structs.TaskRestarting, Time: ago(2 * time.Second), DisplayMessage: "Task restarting in 1s"},
	}
	a := withStatus(allocs[0], "pending")
	a.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"server": {State: "pending", Restarts: 1, Events: events}})
	restarting = []*structs.Allocation{a, allocs[1], allocs[2]}
	events = append(events,
		&structs.TaskEvent{Type: structs.TaskDriverFailure, Time: ago(time.Second),
			DisplayMessage: "Failed to start task: fork/exec /bin/nope: no such file or directory",
			DriverError:    "fork/exec /bin/nope: no such file or directory"},
		&structs.TaskEvent{Type: structs.TaskNotRestarting, Time: ago(time.Second), FailsTask: true,
			DisplayMessage: `Exceeded allowed attempts 1 in interval 30m0s and mode is "fail"`})
	f := withStatus(allocs[0], "failed")
	f.ClientDescription = "Failed tasks"
	f.TaskStates = structs.NewTaskStates(map[string]*structs.TaskState{"server": {State: "dead", Failed: true, Restarts: 1, Events: events}})
	failed = []*structs.Allocation{f, allocs[1], allocs[2]}
	return restarting, failed
}

func withStatus(a *structs.Allocation, clientStatus string) *structs.Allocation {
	c := *a
	c.ClientStatus = clientStatus
	return &c
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run go test -update to create it): %v", path, err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// job run sends the parsed file, with -var applied, and -check-index as
// a check-and-set register.
func TestJobRunRequest(t *testing.T) {
	var body structs.JobRegisterHTTPRequest
	ts := fakeAgent(t, map[string]any{"PUT /v1/jobs": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(buf, &body); err != nil {
			t.Errorf("body: %v", err)
		}
		_ = json.NewEncoder(w).Encode(structs.JobRegisterResponse{EvalID: evalID})
	})})
	e, _, errOut := testEnv(map[string]string{"DROVER_ADDR": ts.URL})
	if code := run([]string{"job", "run", "-detach", "-check-index", "0", "-var", "count=7", "testdata/web.nomad.hcl"}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if body.Job == nil || body.Job.ID != "web" || body.Job.TaskGroups[0].Count != 7 || !body.EnforceIndex || body.JobModifyIndex != 0 {
		t.Fatalf("request = %+v job %+v", body, body.Job)
	}
}

func TestJobInit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "example.nomad.hcl")
	e, out, errOut := testEnv(nil)
	if code := run([]string{"job", "init", path}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "Example job file written to "+path) {
		t.Fatalf("stdout = %q", out)
	}
	buf, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(buf), `job "example"`) {
		t.Fatalf("file: %v %q", err, buf)
	}
	e, _, errOut = testEnv(nil)
	if code := run([]string{"job", "init", path}, e); code != 1 || !strings.Contains(errOut.String(), "already exists") {
		t.Fatalf("second init: exit %d: %s", code, errOut)
	}
}

// Every read command takes -json and prints JSON that decodes.
func TestJSONFlag(t *testing.T) {
	job := fixtureJob()
	allocs := fixtureAllocs()
	nodes := fixtureNodes()
	ev := &structs.Evaluation{ID: evalID, JobID: "web", Status: "complete"}
	ts := fakeAgent(t, map[string]any{
		"GET /v1/jobs":                             []*structs.JobListStub{job.Stub(nil)},
		"GET /v1/job/web":                          job,
		"GET /v1/job/web/summary":                  structs.JobSummary{JobID: "web"},
		"GET /v1/job/web/allocations":              stubs(allocs),
		"GET /v1/job/web/evaluations":              []*structs.Evaluation{ev},
		"GET /v1/nodes":                            []*structs.NodeListStub{nodes[0].Stub()},
		"GET /v1/node/" + node1ID:                  nodes[0],
		"GET /v1/node/" + node1ID + "/allocations": allocs,
		"GET /v1/allocations":                      stubs(allocs[:1]),
		"GET /v1/allocation/" + alloc1ID:           allocs[0],
		"GET /v1/evaluations":                      []*structs.Evaluation{ev},
		"GET /v1/evaluation/" + evalID:             ev,
		"GET /v1/agent/members":                    structs.AgentMembersResponse{},
	})
	for _, args := range [][]string{
		{"job", "status", "-json"}, {"job", "status", "-json", "web"}, {"job", "inspect", "web"},
		{"node", "status", "-json"}, {"node", "status", "-json", node1ID},
		{"alloc", "status", "-json", alloc1ID}, {"eval", "status", "-json", evalID}, {"eval", "list", "-json"},
		{"server", "members", "-json"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			e, out, errOut := testEnv(map[string]string{"DROVER_ADDR": ts.URL})
			if code := run(args, e); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var v any
			if err := json.Unmarshal([]byte(out.String()), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"", 3, ""},
		{"only", 1, "only"},
	}
	for _, tc := range cases {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q; want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestNodeAddress(t *testing.T) {
	cases := []struct{ node, agent, want string }{
		{"10.0.0.5:4646", "http://127.0.0.1:4646", "http://10.0.0.5:4646"},
		{"0.0.0.0:4646", "http://10.1.1.1:4646", "http://10.1.1.1:4646"},
		{"[::]:4646", "", "http://127.0.0.1:4646"},
	}
	for _, tc := range cases {
		if got := nodeAddress(tc.node, false, tc.agent); got != tc.want {
			t.Errorf("nodeAddress(%q, %q) = %q; want %q", tc.node, tc.agent, got, tc.want)
		}
	}
}

// initializing is a copy of n whose readiness command keeps failing.
func initializing(n *structs.Node) *structs.Node {
	c := n.Copy()
	c.Status = structs.NodeStatusInit
	c.StatusDescription = "exit status 2: disk not mounted"
	c.Readiness = &structs.NodeReadiness{Message: c.StatusDescription, Since: testNow.Add(-90 * time.Second), Command: true}
	c.Events = append(c.Events, &structs.NodeEvent{Message: "Node readiness check failed: exit status 2: disk not mounted",
		Subsystem: "Readiness", Timestamp: testNow.Add(-90 * time.Second)})
	return c
}

// withHostVolumes is a copy of n offering two host volumes.
func withHostVolumes(n *structs.Node) *structs.Node {
	c := n.Copy()
	c.HostVolumes = map[string]*structs.ClientHostVolumeConfig{
		"pgdata": {Name: "pgdata", Path: "/srv/pg"},
		"certs":  {Name: "certs", Path: "/etc/ssl/certs", ReadOnly: true},
	}
	return c
}

package structs

import (
	"fmt"
	"time"
)

// Realistic messages for the codec benchmarks and tests, shaped like what
// the servers actually send: a plan entry as the plan applier builds it
// (allocations without Job, with AllocatedResources and Metrics), a job
// as registration canonicalizes it, a node as a client registers it, and
// a batch of client allocation updates as the client agent sends them.
// Every call returns the same content: fixed IDs and times, so encoded
// sizes are stable across runs.

var fixtureTime = time.Unix(1700000000, 0).UTC()

func fixtureID(prefix string, i int) string {
	return fmt.Sprintf("%s%07x-1b2c-4d5e-8f90-a1b2c3d4e5f6", prefix, i)
}

// fixtureJob returns a canonicalized service job with three groups.
func fixtureJob() *Job {
	j := &Job{
		Region: DefaultRegion, Namespace: DefaultNamespace, ID: "web-frontend",
		Type: JobTypeService, Priority: 50, Datacenters: []string{"dc1", "dc2"},
		Constraints: []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Meta:        map[string]string{"owner": "team-web", "tier": "frontend"},
		Status:      JobStatusRunning, Version: 3, SubmitTime: fixtureTime.UnixNano(),
		CreateIndex: 100, ModifyIndex: 250, JobModifyIndex: 250,
	}
	for g, name := range []string{"web", "api", "cache"} {
		tg := &TaskGroup{Name: name, Count: 10 * (g + 1),
			Constraints: []*Constraint{{Operand: ConstraintDistinctHosts, RTarget: "true"}},
			Meta:        map[string]string{"group": name},
		}
		for t := 0; t < 2; t++ {
			tg.Tasks = append(tg.Tasks, &Task{
				Name: fmt.Sprintf("%s-%d", name, t), Driver: "raw_exec",
				Config: map[string]any{"command": "/usr/local/bin/" + name,
					"args": []any{"-port", "8080", "-verbose"}},
				Env:         map[string]string{"PORT": "8080", "ENV": "production"},
				Resources:   &Resources{CPU: 500, MemoryMB: 256, DiskMB: 150},
				Meta:        map[string]string{"version": "1.2.3"},
				KillTimeout: 10 * time.Second, KillSignal: "SIGTERM", Leader: t == 0,
			})
		}
		j.TaskGroups = append(j.TaskGroups, tg)
	}
	j.Name = j.ID
	j.Canonicalize()
	// The golden entries predate node pools: their jobs name none (the
	// servers read "" as the default pool).
	j.NodePool = ""
	return j
}

// fixtureNode returns a ready node as a client registers it.
func fixtureNode() *Node {
	n := &Node{
		ID: fixtureID("a", 1), SecretID: fixtureID("b", 1), Datacenter: "dc1",
		Name: "client-0001", HTTPAddr: "10.0.0.1:4646",
		Attributes: map[string]string{
			"kernel.name": "linux", "kernel.version": "6.1.0", "arch": "amd64",
			"os.name": "debian", "os.version": "12", "cpu.arch": "amd64",
			"cpu.numcores": "8", "cpu.frequency": "3000", "cpu.totalcompute": "24000",
			"memory.totalbytes": "34359738368", "unique.hostname": "client-0001",
			"unique.network.ip-address": "10.0.0.1", "drover.version": "0.1.0",
			"driver.raw_exec": "1", "driver.mock_driver": "1",
		},
		NodeResources: &NodeResources{
			Cpu:    NodeCpuResources{CpuShares: 24000, TotalCpuCores: 8},
			Memory: NodeMemoryResources{MemoryMB: 32768},
			Disk:   NodeDiskResources{DiskMB: 500 * 1024},
		},
		ReservedResources: &NodeReservedResources{
			Cpu: NodeReservedCpuResources{CpuShares: 100}, Memory: NodeReservedMemoryResources{MemoryMB: 256},
		},
		Meta:      map[string]string{"rack": "r1"},
		NodeClass: "linux-large", NodePool: "default",
		SchedulingEligibility: NodeSchedulingEligible, Status: NodeStatusReady,
		StatusUpdatedAt: fixtureTime.UnixNano(),
		Events: []*NodeEvent{{Message: "Node registered", Subsystem: "Cluster",
			Timestamp: fixtureTime, CreateIndex: 10}},
		Drivers: map[string]*DriverInfo{
			"raw_exec":    {Attributes: map[string]string{"driver.raw_exec": "1"}, Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: fixtureTime},
			"mock_driver": {Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: fixtureTime},
		},
		CreateIndex: 10, ModifyIndex: 12,
	}
	n.ComputedClass = "v1:12345678901234567890"
	return n
}

// fixturePlanResults returns the Raft entry of a plan that placed n
// allocations of fixtureJob's first group, as the plan applier builds it.
func fixturePlanResults(n int) *ApplyPlanResultsRequest {
	job := fixtureJob()
	evalID := fixtureID("e", 1)
	tg := job.TaskGroups[0]
	req := &ApplyPlanResultsRequest{Job: job, EvalID: evalID, UpdatedAt: fixtureTime.UnixNano()}
	for i := 0; i < n; i++ {
		tasks := map[string]*AllocatedTaskResources{}
		for _, t := range tg.Tasks {
			tasks[t.Name] = &AllocatedTaskResources{
				Cpu:    AllocatedCpuResources{CpuShares: int64(t.Resources.CPU)},
				Memory: AllocatedMemoryResources{MemoryMB: int64(t.Resources.MemoryMB)},
			}
		}
		req.AllocsUpdated = append(req.AllocsUpdated, &Allocation{
			ID: fixtureID("c", i), Namespace: job.Namespace, EvalID: evalID,
			Name: fmt.Sprintf("%s.%s[%d]", job.ID, tg.Name, i), NodeID: fixtureID("a", i),
			NodeName: fmt.Sprintf("client-%04d", i), JobID: job.ID, TaskGroup: tg.Name,
			AllocatedResources: &AllocatedResources{Tasks: tasks, Shared: AllocatedSharedResources{DiskMB: 300}},
			Metrics: &AllocMetric{NodesEvaluated: 100, NodesFiltered: 3, NodesInPool: 1000,
				NodesAvailable: map[string]int{"dc1": 500, "dc2": 500}, NodesExhausted: 2,
				ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 3},
				DimensionExhausted: map[string]int{"memory": 2}},
			DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusPending,
			JobVersion: job.Version, CreateTime: fixtureTime.UnixNano(), ModifyTime: fixtureTime.UnixNano(),
		})
	}
	return req
}

// fixtureAllocUpdates returns n client updates (running allocations with
// one task state each) as the client agent batches them.
func fixtureAllocUpdates(n int) *AllocUpdateRequest {
	req := &AllocUpdateRequest{WriteRequest: WriteRequest{Region: DefaultRegion}}
	for i := 0; i < n; i++ {
		req.Alloc = append(req.Alloc, &Allocation{
			ID: fixtureID("c", i), NodeID: fixtureID("a", i), Namespace: DefaultNamespace,
			JobID: "web-frontend", TaskGroup: "web", EvalID: fixtureID("e", 1),
			ClientStatus: AllocClientStatusRunning, ClientDescription: "Tasks are running",
			TaskStates: NewTaskStates(map[string]*TaskState{"web-0": {
				State: TaskStateRunning, StartedAt: fixtureTime.Add(2 * time.Second),
				Events: []*TaskEvent{
					{Type: TaskReceived, Time: fixtureTime.UnixNano(), DisplayMessage: "Task received by client"},
					{Type: TaskSetup, Time: fixtureTime.Add(time.Second).UnixNano(), Message: "Building Task Directory", DisplayMessage: "Building Task Directory"},
					{Type: TaskStarted, Time: fixtureTime.Add(2 * time.Second).UnixNano(), DisplayMessage: "Task started by client"},
				},
			}}),
			ModifyTime: fixtureTime.Add(2 * time.Second).UnixNano(),
		})
	}
	return req
}

// Package mock returns valid, realistic objects for tests and benchmarks,
// so a test states only what differs. Every call returns fresh objects
// with new IDs.
//
// This package must never be imported by non-test code paths of a server.
package mock

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/structs"
)

// Job returns a canonicalized service job with one group of 10 "web" tasks.
func Job() *structs.Job {
	j := &structs.Job{
		Region:      structs.DefaultRegion,
		Namespace:   structs.DefaultNamespace,
		ID:          "mock-service-" + structs.GenerateUUID(),
		Type:        structs.JobTypeService,
		Priority:    50,
		Datacenters: []string{"dc1"},
		Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 10,
			Tasks: []*structs.Task{{
				Name:      "web",
				Driver:    "exec",
				Config:    map[string]any{"command": "/bin/date", "args": []any{"+%s", "--utc"}},
				Env:       map[string]string{"FOO": "bar", "PORT": "8080"},
				Resources: &structs.Resources{CPU: 500, MemoryMB: 256, DiskMB: 150},
				Meta:      map[string]string{"owner": "team-a"},
			}},
			Meta: map[string]string{"elb_check_type": "http", "elb_check_interval": "30s"},
		}},
		Meta:       map[string]string{"owner": "armon"},
		SubmitTime: time.Unix(1700000000, 0).UnixNano(),
	}
	j.Name = j.ID
	j.Canonicalize()
	return j
}

// BatchJob returns a canonicalized batch job with one group of 10 tasks.
func BatchJob() *structs.Job {
	j := Job()
	j.ID = "mock-batch-" + structs.GenerateUUID()
	j.Name = j.ID
	j.Type = structs.JobTypeBatch
	for _, tg := range j.TaskGroups {
		tg.RestartPolicy = structs.DefaultRestartPolicy(j.Type)
		tg.ReschedulePolicy = structs.DefaultReschedulePolicy(j.Type)
		tg.Migrate = nil
	}
	return j
}

// Node returns a ready, eligible node with 4000 MHz, 8 GiB and 100 GiB.
func Node() *structs.Node {
	id := structs.GenerateUUID()
	n := &structs.Node{
		ID:         id,
		SecretID:   structs.GenerateUUID(),
		Datacenter: "dc1",
		Name:       "node-" + id[:8],
		HTTPAddr:   "127.0.0.1:4646",
		Attributes: map[string]string{
			"kernel.name": "linux", "arch": "x86", "drover.version": "0.1.0",
			"driver.exec": "1", "unique.network.ip-address": "127.0.0.1",
		},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192},
			Disk:   structs.NodeDiskResources{DiskMB: 100 * 1024},
		},
		ReservedResources: &structs.NodeReservedResources{
			Cpu:    structs.NodeReservedCpuResources{CpuShares: 100},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: 256},
			Disk:   structs.NodeReservedDiskResources{DiskMB: 4 * 1024},
		},
		Meta:                  map[string]string{"pci-dss": "true", "database": "mysql"},
		NodeClass:             "linux-medium-pci",
		NodePool:              "default",
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Drivers: map[string]*structs.DriverInfo{
			"exec": {Detected: true, Healthy: true, UpdateTime: time.Unix(1700000000, 0).UTC()},
		},
	}
	n.ComputedClass = "v1:" + n.NodeClass
	return n
}

// Eval returns a pending evaluation for a new mock job ID.
func Eval() *structs.Evaluation {
	return &structs.Evaluation{
		ID:          structs.GenerateUUID(),
		Namespace:   structs.DefaultNamespace,
		Priority:    50,
		Type:        structs.JobTypeService,
		TriggeredBy: structs.EvalTriggerJobRegister,
		JobID:       structs.GenerateUUID(),
		Status:      structs.EvalStatusPending,
		CreateTime:  time.Unix(1700000000, 0).UnixNano(),
		ModifyTime:  time.Unix(1700000000, 0).UnixNano(),
	}
}

// EvalFor returns a pending evaluation for job.
func EvalFor(job *structs.Job) *structs.Evaluation {
	return structs.NewEval(job, structs.EvalTriggerJobRegister, time.Unix(1700000000, 0))
}

// Alloc returns a pending allocation of job's first group on node, with
// Job set.
func Alloc(job *structs.Job, node *structs.Node) *structs.Allocation {
	tg := job.TaskGroups[0]
	tasks := map[string]*structs.AllocatedTaskResources{}
	var disk int64
	for _, t := range tg.Tasks {
		tasks[t.Name] = &structs.AllocatedTaskResources{
			Cpu:    structs.AllocatedCpuResources{CpuShares: int64(t.Resources.CPU)},
			Memory: structs.AllocatedMemoryResources{MemoryMB: int64(t.Resources.MemoryMB)},
		}
		disk += int64(t.Resources.DiskMB)
	}
	return &structs.Allocation{
		ID:        structs.GenerateUUID(),
		Namespace: job.Namespace,
		EvalID:    structs.GenerateUUID(),
		Name:      fmt.Sprintf("%s.%s[0]", job.ID, tg.Name),
		NodeID:    node.ID,
		NodeName:  node.Name,
		JobID:     job.ID,
		Job:       job,
		TaskGroup: tg.Name,
		AllocatedResources: &structs.AllocatedResources{
			Tasks:  tasks,
			Shared: structs.AllocatedSharedResources{DiskMB: disk},
		},
		Metrics:       &structs.AllocMetric{NodesEvaluated: 10, NodesFiltered: 2, NodesAvailable: map[string]int{"dc1": 10}},
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
		JobVersion:    job.Version,
		CreateTime:    time.Unix(1700000000, 0).UnixNano(),
		ModifyTime:    time.Unix(1700000000, 0).UnixNano(),
	}
}

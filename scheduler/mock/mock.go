// Package mock returns valid objects for scheduler tests and benchmarks,
// so a test states only what differs from a typical job, node or
// allocation. Every call returns fresh objects with new IDs.
//
// It imports only structs, and must never be used outside tests and
// benchmarks.
package mock

import (
	"strconv"
	"time"

	"github.com/drover-project/drover/structs"
)

// Job returns a canonicalized service job "web" with one group "web" of 10
// tasks using the mock driver (500 MHz, 256 MB each) and the constraint
// ${attr.kernel.name} = linux, in datacenter dc1.
func Job() *structs.Job {
	id := "web-" + structs.GenerateUUID()[:8]
	j := &structs.Job{
		Region: structs.DefaultRegion, Namespace: structs.DefaultNamespace,
		ID: id, Name: id, Type: structs.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"},
		Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 10,
			ReschedulePolicy: &structs.ReschedulePolicy{
				Attempts: 2, Interval: 10 * time.Minute, Delay: 5 * time.Second,
				DelayFunction: structs.DelayFunctionConstant,
			},
			Tasks: []*structs.Task{{
				Name:      "web",
				Driver:    "mock",
				Config:    map[string]any{"run_for": "10s"},
				Env:       map[string]string{"PORT": "8080"},
				Resources: &structs.Resources{CPU: 500, MemoryMB: 256},
			}},
		}},
		Status: structs.JobStatusPending,
	}
	j.Canonicalize()
	return j
}

// BatchJob returns Job as a batch job (batch restart and reschedule
// defaults: one reschedule attempt per 24h, constant 5s delay).
func BatchJob() *structs.Job {
	j := Job()
	j.ID = "batch-" + structs.GenerateUUID()[:8]
	j.Name = j.ID
	j.Type = structs.JobTypeBatch
	for _, tg := range j.TaskGroups {
		tg.RestartPolicy = structs.DefaultRestartPolicy(j.Type)
		tg.ReschedulePolicy = structs.DefaultReschedulePolicy(j.Type)
		tg.Migrate = nil
	}
	return j
}

// SystemJob returns a system job with one group of count 1 (one
// allocation per matching node).
func SystemJob() *structs.Job {
	j := Job()
	j.ID = "system-" + structs.GenerateUUID()[:8]
	j.Name = j.ID
	j.Type = structs.JobTypeSystem
	for _, tg := range j.TaskGroups {
		tg.Count = 1
		tg.RestartPolicy = structs.DefaultRestartPolicy(j.Type)
		tg.ReschedulePolicy = structs.DefaultReschedulePolicy(j.Type)
		tg.Migrate = nil
	}
	return j
}

// Node returns a ready, eligible linux/amd64 node in dc1 with 4000 MHz
// (4 cores), 8192 MB and 100 GB, of which 100 MHz, 256 MB and 4 GB are
// reserved, and healthy mock and raw_exec drivers.
func Node() *structs.Node {
	id := structs.GenerateUUID()
	healthy := func() *structs.DriverInfo {
		return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: "healthy"}
	}
	n := &structs.Node{
		ID: id, SecretID: structs.GenerateUUID(), Datacenter: "dc1",
		Name: "node-" + id[:8], HTTPAddr: "127.0.0.1:4646",
		Attributes: map[string]string{
			"kernel.name": "linux", "arch": "amd64", "cpu.arch": "amd64",
			"os.name": "ubuntu", "os.version": "22.04", "drover.version": "0.1.0",
			"driver.mock": "1", "driver.raw_exec": "1",
			"unique.hostname": "node-" + id[:8], "unique.network.ip-address": "127.0.0.1",
		},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192},
			Disk:   structs.NodeDiskResources{DiskMB: 100 * 1024},
			NodeNetworks: []*structs.NodeNetworkResource{{Mode: structs.NetworkModeHost, Device: "eth0",
				Addresses: []structs.NodeNetworkAddress{{Family: "ipv4", Alias: structs.DefaultHostNetwork, Address: "127.0.0.1"}}}},
		},
		ReservedResources: &structs.NodeReservedResources{
			Cpu:    structs.NodeReservedCpuResources{CpuShares: 100},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: 256},
			Disk:   structs.NodeReservedDiskResources{DiskMB: 4 * 1024},
		},
		Meta:                  map[string]string{"rack": "r1"},
		NodeClass:             "linux-medium",
		NodePool:              "default",
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Status:                structs.NodeStatusReady,
		Drivers:               map[string]*structs.DriverInfo{"mock": healthy(), "raw_exec": healthy()},
	}
	return n
}

// Alloc returns a running allocation of instance index of job's first
// group on node, with the resources the group asks for and Job set.
func Alloc(job *structs.Job, node *structs.Node, index int) *structs.Allocation {
	tg := job.TaskGroups[0]
	ar := &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{}}
	for _, t := range tg.Tasks {
		ar.Tasks[t.Name] = &structs.AllocatedTaskResources{
			Cpu:    structs.AllocatedCpuResources{CpuShares: int64(t.Resources.CPU)},
			Memory: structs.AllocatedMemoryResources{MemoryMB: int64(t.Resources.MemoryMB)},
		}
		ar.Shared.DiskMB += int64(t.Resources.DiskMB)
	}
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, EvalID: structs.GenerateUUID(),
		Name:   job.ID + "." + tg.Name + "[" + strconv.Itoa(index) + "]",
		NodeID: node.ID, NodeName: node.Name, JobID: job.ID, Job: job, TaskGroup: tg.Name,
		AllocatedResources: ar, DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusRunning, JobVersion: job.Version,
	}
}

// Eval returns a pending evaluation for job, triggered by a registration.
func Eval(job *structs.Job) *structs.Evaluation {
	return &structs.Evaluation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, Priority: job.Priority,
		Type: job.Type, TriggeredBy: structs.EvalTriggerJobRegister, JobID: job.ID,
		JobModifyIndex: job.JobModifyIndex, Status: structs.EvalStatusPending,
	}
}

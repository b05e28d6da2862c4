package structs

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"testing"
)

func boundsJob(r Resources) *Job {
	j := &Job{
		ID: "j", Name: "j", Datacenters: []string{"dc1"},
		TaskGroups: []*TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*Task{
				{Name: "a", Driver: "mock", Resources: &Resources{CPU: r.CPU, Cores: r.Cores, MemoryMB: r.MemoryMB, DiskMB: r.DiskMB}},
				{Name: "b", Driver: "mock", Resources: &Resources{CPU: r.CPU, Cores: r.Cores, MemoryMB: r.MemoryMB, DiskMB: r.DiskMB}},
			},
		}},
	}
	j.Canonicalize()
	return j
}

// TestTaskResourceBounds: asks that would wrap around when two tasks are
// summed are refused with the field named; asks at the bounds pass.
func TestTaskResourceBounds(t *testing.T) {
	if err := boundsJob(Resources{CPU: MaxTaskCPU, MemoryMB: MaxTaskMemoryMB, DiskMB: MaxTaskDiskMB}).Validate(); err != nil {
		t.Fatalf("asks at the bounds: %v", err)
	}
	if err := boundsJob(Resources{Cores: MaxTaskCores, MemoryMB: MinMemoryMB}).Validate(); err != nil {
		t.Fatalf("cores at the bound: %v", err)
	}
	half := math.MaxInt/2 + 1
	for field, r := range map[string]Resources{
		"CPU":      {CPU: half, MemoryMB: 100},
		"Cores":    {Cores: half, MemoryMB: 100},
		"MemoryMB": {CPU: 100, MemoryMB: half},
		"DiskMB":   {CPU: 100, MemoryMB: 100, DiskMB: half},
	} {
		err := boundsJob(r).Validate()
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s = %d: %v, want a validation error", field, half, err)
		}
		want := "TaskGroups[0].Tasks[0].Resources." + field + ": must be at most"
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", field, err, want)
		}
	}
}

// TestResourceBoundsCannotOverflow: the largest ask of a whole job, every
// bound at its maximum, fits an int64 with room to spare.
func TestResourceBoundsCannotOverflow(t *testing.T) {
	perJob := uint64(MaxGroupsPerJob) * MaxGroupCount * MaxTasksPerGroup
	for name, max := range map[string]uint64{"CPU": MaxTaskCPU, "Cores": MaxTaskCores, "MemoryMB": MaxTaskMemoryMB, "DiskMB": MaxTaskDiskMB} {
		hi, lo := bits.Mul64(perJob, max)
		if hi != 0 || lo >= 1<<62 {
			t.Errorf("%s: a job's total ask can reach %d*%d, too close to overflow", name, perJob, max)
		}
	}
}

package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestRegisterRefusesTaskConfigThatDoesNotFitItsDriver(t *testing.T) {
	s := schedServer(t, 0)
	tests := []struct {
		name   string
		driver string
		config map[string]any
		want   string // a field message the error must contain; "" = accepted
	}{
		{"raw_exec without command", "raw_exec", map[string]any{"args": []any{"x"}}, "TaskGroups[0].Tasks[0].Config.command"},
		{"raw_exec args of the wrong type", "raw_exec", map[string]any{"command": "/bin/true", "args": "x"}, "TaskGroups[0].Tasks[0].Config.args"},
		{"unknown key", "raw_exec", map[string]any{"command": "/bin/true", "bogus": 1}, "TaskGroups[0].Tasks[0].Config.bogus"},
		{"escaping command", "raw_exec", map[string]any{"command": "../../bin/sh"}, "TaskGroups[0].Tasks[0].Config.command"},
		{"valid raw_exec", "raw_exec", map[string]any{"command": "/bin/true"}, ""},
		{"driver Drover does not know is left to placement", "podman", map[string]any{"image": "x"}, ""},
		{"valid docker", "docker", map[string]any{"image": "x", "ports": []any{"http"}}, ""},
		{"docker key mistyped", "docker", map[string]any{"image": "x", "comand": "sh"}, "TaskGroups[0].Tasks[0].Config.comand"},
		{"docker key refused by name", "docker", map[string]any{"image": "x", "cpuset_cpus": "1"}, "Drover does not support the docker driver's cpuset_cpus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			job.TaskGroups[0].Tasks[0].Driver = tc.driver
			job.TaskGroups[0].Tasks[0].Config = tc.config
			before, _ := s.State().Index("jobs")
			var resp structs.JobRegisterResponse
			err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if structs.CodeOf(err) != structs.ErrCodeInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an invalid error naming %s", err, tc.want)
			}
			time.Sleep(10 * time.Millisecond)
			if after, _ := s.State().Index("jobs"); after != before {
				t.Fatal("a refused job was written")
			}
		})
	}
}

// TestRegisterMemoryMaxPerDriver: memory_max is refused by name for a
// driver that cannot enforce it (raw_exec), stored for one that can (the
// mock), and a driver Drover does not know is left to placement.
func TestRegisterMemoryMaxPerDriver(t *testing.T) {
	s := schedServer(t, 0)
	for _, tc := range []struct {
		driver string
		config map[string]any
		want   string
	}{
		{"raw_exec", map[string]any{"command": "/bin/true"},
			"TaskGroups[0].Tasks[0].Resources.MemoryMaxMB: Drover does not support memory_max with the raw_exec driver"},
		{"mock", map[string]any{"run_for": "1s"}, ""},
		{"docker", map[string]any{"image": "x"}, ""},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			job := mock.Job()
			job.ID = "mm-" + tc.driver
			task := job.TaskGroups[0].Tasks[0]
			task.Driver, task.Config = tc.driver, tc.config
			task.Resources.MemoryMaxMB = 1024
			var resp structs.JobRegisterResponse
			err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
			if tc.want != "" {
				if structs.CodeOf(err) != structs.ErrCodeInvalid || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
			if err != nil || stored.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB != 1024 {
				t.Fatalf("stored %+v, %v", stored, err)
			}
		})
	}
}

package jobspec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

const volumesHCL = `
job "db" {
  type = "batch"
  group "g" {
    shutdown_delay = "5s"
    restart {
      attempts = 4
      delay    = "10s"
    }
    volume "data" {
      type      = "host"
      source    = "pgdata"
      read_only = true
    }
    ephemeral_disk {
      size   = 500
      sticky = true
    }
    task "t" {
      driver         = "mock_driver"
      shutdown_delay = "2s"
      config { run_for = "1s" }
      restart {
        attempts = 1
        mode     = "delay"
      }
      logs {
        max_files     = 3
        max_file_size = 5
      }
      volume_mount {
        volume           = "data"
        destination      = "/srv/data"
        read_only        = true
        propagation_mode = "private"
      }
      resources {
        memory     = 128
        memory_max = 256
      }
    }
  }
}
`

// The same job as Nomad's API JSON, as Nomad's CLI sends it (nulls, not
// defaults, for what the file leaves out).
const volumesJSON = `{"ID": "db", "Name": "db", "Type": "batch",
  "TaskGroups": [{"Name": "g", "Count": null, "ShutdownDelay": 5000000000,
    "RestartPolicy": {"Attempts": 4, "Delay": 10000000000},
    "Volumes": {"data": {"Name": "data", "Type": "host", "Source": "pgdata", "ReadOnly": true,
      "Sticky": false, "AccessMode": "", "AttachmentMode": "", "MountOptions": null, "PerAlloc": false}},
    "EphemeralDisk": {"SizeMB": 500, "Sticky": true, "Migrate": null},
    "Tasks": [{"Name": "t", "Driver": "mock_driver", "ShutdownDelay": 2000000000, "Config": {"run_for": "1s"},
      "RestartPolicy": {"Attempts": 1, "Mode": "delay"},
      "LogConfig": {"MaxFiles": 3, "MaxFileSizeMB": 5, "Disabled": null, "Enabled": null},
      "VolumeMounts": [{"Volume": "data", "Destination": "/srv/data", "ReadOnly": true,
        "PropagationMode": "private", "SELinuxLabel": null}],
      "Resources": {"MemoryMB": 128, "MemoryMaxMB": 256}}]}]}`

// TestParseVolumesAndSmallerBlocks: HCL and Nomad's JSON give the same
// job for volumes, volume mounts, ephemeral_disk, logs, shutdown_delay,
// a task's restart block (laid over its group's, as Nomad merges them)
// and memory_max; and the job is valid.
func TestParseVolumesAndSmallerBlocks(t *testing.T) {
	hcl, err := Parse("v.hcl", []byte(volumesHCL), nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := DecodeAPIJobBytes("Job", []byte(volumesJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []*structs.Job{hcl, js} {
		j.Canonicalize()
		if err := j.Validate(); err != nil {
			t.Fatalf("invalid: %v", err)
		}
	}
	tg := hcl.TaskGroups[0]
	task := tg.Tasks[0]
	groupRestart := &structs.RestartPolicy{Attempts: 4, Interval: 24 * time.Hour, Delay: 10 * time.Second, Mode: "fail"}
	checks := []struct {
		what      string
		got, want any
	}{
		{"group shutdown_delay", *tg.ShutdownDelay, 5 * time.Second},
		{"group restart", tg.RestartPolicy, groupRestart},
		{"volumes", tg.Volumes, map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "pgdata", ReadOnly: true}}},
		{"ephemeral_disk", tg.EphemeralDisk, &structs.EphemeralDisk{SizeMB: 500, Sticky: true}},
		{"task shutdown_delay", task.ShutdownDelay, 2 * time.Second},
		{"task restart over the group's", task.RestartPolicy,
			&structs.RestartPolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 10 * time.Second, Mode: "delay"}},
		{"logs", task.LogConfig, &structs.LogConfig{MaxFiles: 3, MaxFileSizeMB: 5}},
		{"volume_mount", task.VolumeMounts, []*structs.VolumeMount{{Volume: "data", Destination: "/srv/data", ReadOnly: true}}},
		{"memory_max", task.Resources.MemoryMaxMB, 256},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %#v; want %#v", c.what, c.got, c.want)
		}
	}
	if !reflect.DeepEqual(hcl, js) {
		t.Fatalf("HCL and JSON differ:\nHCL  %#v\nJSON %#v", hcl.TaskGroups[0], js.TaskGroups[0])
	}
	// Without a restart block of its own a task keeps nil: its group's
	// applies.
	if got := structs.EffectiveRestartPolicy(tg, &structs.Task{}); !reflect.DeepEqual(got, groupRestart) {
		t.Fatalf("effective restart %+v", got)
	}
}

// TestVolumeAndBlockRefusals: every refusal names the field path, in HCL
// (line and block) and in JSON (Job.TaskGroups[0]...), and the blocks
// Drover does not build say what it offers instead.
func TestVolumeAndBlockRefusals(t *testing.T) {
	task := func(body string) string {
		return `job "j" {
  group "g" {
    volume "data" {
      type   = "host"
      source = "pgdata"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
` + body + `
    }
  }
}`
	}
	group := func(body string) string {
		return `job "j" {
  group "g" {
` + body + `
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`
	}
	hclCases := []struct {
		name, src string
		want      []string // in the error, all of them
	}{
		{"csi volume", group(`volume "x" {
      type   = "csi"
      source = "ebs"
    }`), []string{`TaskGroups[0].Volumes["x"].Type: Drover does not support CSI volumes`}},
		{"volume access_mode", group(`volume "x" {
      type        = "host"
      source      = "a"
      access_mode = "single-node-writer"
    }`), []string{`Drover does not support the "access_mode" argument in a volume block`}},
		{"migrate", group(`ephemeral_disk {
      migrate = true
    }`), []string{`TaskGroups[0].EphemeralDisk.Migrate: Drover does not support ephemeral_disk migrate`}},
		{"mount of no group volume", task(`volume_mount {
        volume      = "nope"
        destination = "/srv"
      }`), []string{`TaskGroups[0].Tasks[0].VolumeMounts[0].Volume: the group has no volume "nope"; it has data`}},
		{"mount escaping the task dir", task(`volume_mount {
        volume      = "data"
        destination = "../../etc"
      }`), []string{`TaskGroups[0].Tasks[0].VolumeMounts[0].Destination: must stay inside the task directory`}},
		{"mount over the task dir", task(`volume_mount {
        volume      = "data"
        destination = "/"
      }`), []string{`TaskGroups[0].Tasks[0].VolumeMounts[0].Destination: must be a path inside the task directory, not the directory itself`}},
		{"propagation", task(`volume_mount {
        volume           = "data"
        destination      = "/srv"
        propagation_mode = "bidirectional"
      }`), []string{`Drover does not support propagation_mode "bidirectional" in a volume_mount block`}},
		{"selinux", task(`volume_mount {
        volume        = "data"
        destination   = "/srv"
        selinux_label = "z"
      }`), []string{`Drover does not support the "selinux_label" argument in a volume_mount block`}},
		{"logs enabled", task(`logs {
        enabled = true
      }`), []string{`Drover does not support the "enabled" argument in a logs block; instead, use disabled`}},
		{"logs too small", task(`logs {
        max_files = 0
      }`), []string{`TaskGroups[0].Tasks[0].LogConfig.MaxFiles: must be at least 1`}},
		{"logs larger than the disk", group(`ephemeral_disk {
      size = 50
    }`), []string{`TaskGroups[0].EphemeralDisk.SizeMB: task "t"'s logs may take 100 MB`}},
		{"memory_max below memory", task(`resources {
        memory     = 300
        memory_max = 100
      }`), []string{`TaskGroups[0].Tasks[0].Resources.MemoryMaxMB: must be at least MemoryMB (300)`}},
		{"consul", task(`consul {}`), []string{`Drover does not support the "consul" block in a task block; instead, register services with provider = "nomad"`}},
		{"vault", task(`vault {}`), []string{`Drover does not support the "vault" block in a task block; instead, keep secrets in Drover's variables`}},
		{"csi_plugin", task(`csi_plugin {}`), []string{`Drover does not support the "csi_plugin" block in a task block; instead, mount a directory of the node with a client host_volume`}},
		{"device", task(`resources {
        device "nvidia/gpu" {}
      }`), []string{`Drover does not support the "device" block in a resources block; instead, place tasks on nodes with the hardware`}},
		{"named identity", task(`identity {
        name = "vault"
      }`), []string{`Drover does not support named workload identities (identity "vault")`, `Drover's variables and services`}},
		{"negative shutdown_delay", task(`shutdown_delay = "-1s"`), []string{`TaskGroups[0].Tasks[0].ShutdownDelay: must be between 0 and`}},
	}
	for _, tc := range hclCases {
		t.Run("hcl/"+tc.name, func(t *testing.T) {
			err := parseAndValidate(t, tc.src)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v; want it to contain %q", err, w)
				}
			}
		})
	}

	jsonCases := []struct {
		name, tg, want string
	}{
		{"csi volume", `"Volumes": {"x": {"Type": "csi", "Source": "ebs"}}`,
			`TaskGroups[0].Volumes["x"].Type: Drover does not support CSI volumes`},
		{"per_alloc", `"Volumes": {"x": {"Type": "host", "Source": "a", "PerAlloc": true}}`,
			`Job.TaskGroups[0].Volumes["x"].PerAlloc: Drover does not support per_alloc volumes`},
		{"migrate", `"EphemeralDisk": {"Migrate": true}`,
			`TaskGroups[0].EphemeralDisk.Migrate: Drover does not support ephemeral_disk migrate`},
		{"mount of no group volume", `"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"},
		  "VolumeMounts": [{"Volume": "nope", "Destination": "/srv"}]}]`,
			`TaskGroups[0].Tasks[0].VolumeMounts[0].Volume: the group has no volume "nope" (it has no volume block)`},
		{"propagation", `"Volumes": {"v": {"Type": "host", "Source": "a"}}, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"},
		  "VolumeMounts": [{"Volume": "v", "Destination": "/srv", "PropagationMode": "host-to-task"}]}]`,
			`Job.TaskGroups[0].Tasks[0].VolumeMounts[0].PropagationMode: Drover does not support mount propagation modes other than private`},
		{"logs enabled", `"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "LogConfig": {"Enabled": true}}]`,
			`Job.TaskGroups[0].Tasks[0].LogConfig.Enabled: Drover does not support the deprecated enabled argument`},
		{"vault", `"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Vault": {"Role": "r"}}]`,
			`Job.TaskGroups[0].Tasks[0].Vault: Drover does not support Vault; instead, keep secrets in Drover's variables`},
		{"consul", `"Consul": {"Namespace": "x"}`,
			`Job.TaskGroups[0].Consul: Drover does not support Consul; instead, register services with provider "nomad"`},
		{"csi_plugin", `"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "CSIPluginConfig": {"ID": "p"}}]`,
			`Job.TaskGroups[0].Tasks[0].CSIPluginConfig: Drover does not support CSI plugins; instead, mount a directory`},
		{"device", `"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Resources": {"Devices": [{"Name": "gpu"}]}}]`,
			`Job.TaskGroups[0].Tasks[0].Resources.Devices: Drover does not support devices; instead, place tasks on nodes`},
		{"named identity", `"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Identity": {"Name": "vault"}}]`,
			`Job.TaskGroups[0].Tasks[0].Identity.Name: Drover does not support named workload identities`},
	}
	for _, tc := range jsonCases {
		t.Run("json/"+tc.name, func(t *testing.T) {
			tg := tc.tg
			if !strings.Contains(tg, `"Tasks"`) {
				tg += `, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]`
			}
			job, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "j", "TaskGroups": [{"Name": "g", `+tg+`}]}`))
			if err == nil {
				job.Canonicalize()
				err = job.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

// parseAndValidate parses src and validates the job as the server does
// (Canonicalize, then Validate); it returns the first error.
func parseAndValidate(t *testing.T, src string) error {
	t.Helper()
	job, err := Parse("t.hcl", []byte(src), nil)
	if err != nil {
		return err
	}
	job.Canonicalize()
	return job.Validate()
}

package agent

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server/coregc"
)

// The defaults are Nomad's (server eval_gc_threshold 1h, job_gc_threshold
// 4h, node_gc_threshold 24h, deployment_gc_threshold 1h, job_gc_interval 5m; client gc_interval 1m,
// gc_max_allocs 50; enable_debug off) and agree with the defaults of the
// packages that use them.
func TestGCDebugDefaults(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"job_gc_interval", c.Server.JobGCInterval, 5 * time.Minute},
		{"eval_gc_threshold", c.Server.EvalGCThreshold, time.Hour},
		{"job_gc_threshold", c.Server.JobGCThreshold, 4 * time.Hour},
		{"node_gc_threshold", c.Server.NodeGCThreshold, 24 * time.Hour},
		{"deployment_gc_threshold", c.Server.DeploymentGCThreshold, time.Hour},
		{"client gc_interval", c.Client.GCInterval, time.Minute},
		{"client gc_retention", c.Client.GCRetention, time.Hour},
		// The packages' own defaults, which a zero value would take.
		{"coregc interval", coregc.DefaultInterval, c.Server.JobGCInterval},
		{"coregc eval", coregc.DefaultEvalThreshold, c.Server.EvalGCThreshold},
		{"coregc job", coregc.DefaultJobThreshold, c.Server.JobGCThreshold},
		{"coregc node", coregc.DefaultNodeThreshold, c.Server.NodeGCThreshold},
		{"coregc deployment", coregc.DefaultDeploymentThreshold, c.Server.DeploymentGCThreshold},
		{"client interval", client.DefaultGCInterval, c.Client.GCInterval},
		{"client retention", client.DefaultGCRetention, c.Client.GCRetention},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %s, want %s", tc.got, tc.want)
			}
		})
	}
	if c.Client.GCMaxAllocs != 50 || client.DefaultGCMaxAllocs != 50 {
		t.Fatalf("gc_max_allocs default %d (client package %d), want 50", c.Client.GCMaxAllocs, client.DefaultGCMaxAllocs)
	}
	if c.EnableDebug {
		t.Fatal("enable_debug is on by default")
	}
	if !DevConfig().EnableDebug {
		t.Fatal("-dev does not turn enable_debug on")
	}
}

func TestParseGCDebugSettings(t *testing.T) {
	const good = `enable_debug = true
server {
  job_gc_interval   = "10m"
  eval_gc_threshold = "30m"
  job_gc_threshold  = "2h"
  node_gc_threshold = "48h"
  deployment_gc_threshold = "90m"
}
client {
  gc_interval   = "30s"
  gc_retention  = "90m"
  gc_max_allocs = 20
}
`
	t.Run("hcl", func(t *testing.T) {
		c := DefaultConfig()
		if err := parseConfig(c, "gc.hcl", []byte(good)); err != nil {
			t.Fatal(err)
		}
		checkGoodGC(t, c)
	})
	t.Run("json", func(t *testing.T) {
		c := DefaultConfig()
		src := `{"enable_debug": true,
 "server": {"job_gc_interval": "10m", "eval_gc_threshold": "30m", "job_gc_threshold": "2h", "node_gc_threshold": "48h", "deployment_gc_threshold": "90m"},
 "client": {"gc_interval": "30s", "gc_retention": "90m", "gc_max_allocs": 20}}`
		if err := parseConfig(c, "gc.json", []byte(src)); err != nil {
			t.Fatal(err)
		}
		checkGoodGC(t, c)
	})
	t.Run("a later file keeps what it does not name", func(t *testing.T) {
		c := DefaultConfig()
		if err := parseConfig(c, "a.hcl", []byte(good)); err != nil {
			t.Fatal(err)
		}
		if err := parseConfig(c, "b.hcl", []byte("server {\n  job_gc_threshold = \"3h\"\n}\n")); err != nil {
			t.Fatal(err)
		}
		if c.Server.JobGCThreshold != 3*time.Hour || c.Server.EvalGCThreshold != 30*time.Minute || !c.EnableDebug {
			t.Fatalf("server %+v debug %v", c.Server, c.EnableDebug)
		}
	})
	t.Run("enable_debug = false overrides -dev", func(t *testing.T) {
		c := DevConfig()
		if err := parseConfig(c, "d.hcl", []byte("enable_debug = false\n")); err != nil {
			t.Fatal(err)
		}
		if c.EnableDebug {
			t.Fatal("enable_debug still on")
		}
	})
}

func checkGoodGC(t *testing.T, c *Config) {
	t.Helper()
	s, cl := c.Server, c.Client
	if s.JobGCInterval != 10*time.Minute || s.EvalGCThreshold != 30*time.Minute ||
		s.JobGCThreshold != 2*time.Hour || s.NodeGCThreshold != 48*time.Hour || s.DeploymentGCThreshold != 90*time.Minute {
		t.Errorf("server GC settings %+v", s)
	}
	if cl.GCInterval != 30*time.Second || cl.GCRetention != 90*time.Minute || cl.GCMaxAllocs != 20 {
		t.Errorf("client GC settings %+v", cl)
	}
	if !c.EnableDebug {
		t.Error("enable_debug not set")
	}
}

func TestParseGCSettingErrors(t *testing.T) {
	cases := []struct {
		name, src, err string
	}{
		{"job_gc_interval", "server {\n  job_gc_interval = \"often\"\n}\n", `e.hcl:2:21: job_gc_interval: must be a positive duration such as "10s"; got "often"`},
		{"eval_gc_threshold", "server {\n  eval_gc_threshold = \"1 hour\"\n}\n", `e.hcl:2:23: eval_gc_threshold: must be a positive duration`},
		{"job_gc_threshold no unit", "server {\n  job_gc_threshold = \"4\"\n}\n", `e.hcl:2:22: job_gc_threshold: must be a positive duration`},
		{"node_gc_threshold zero", "server {\n  node_gc_threshold = \"0s\"\n}\n", `e.hcl:2:23: node_gc_threshold: must be a positive duration`},
		{"job_gc_threshold negative", "server {\n  job_gc_threshold = \"-1h\"\n}\n", `e.hcl:2:22: job_gc_threshold: must be a positive duration`},
		{"deployment_gc_threshold zero", "server {\n  deployment_gc_threshold = \"0s\"\n}\n", `e.hcl:2:29: deployment_gc_threshold: must be a positive duration`},
		{"gc_interval", "client {\n  gc_interval = \"1x\"\n}\n", `e.hcl:2:17: gc_interval: must be a positive duration`},
		{"gc_retention zero", "client {\n  gc_retention = \"0\"\n}\n", `e.hcl:2:18: gc_retention: must be a positive duration`},
		{"gc_max_allocs zero", "client {\n  gc_max_allocs = 0\n}\n", `e.hcl:2:19: gc_max_allocs: must be positive; got 0`},
		{"gc_max_allocs wrong type", "client {\n  gc_max_allocs = \"many\"\n}\n", `e.hcl:2:20: Unsuitable value type`},
		{"enable_debug wrong type", "enable_debug = \"yes please\"\n", `e.hcl:1:17: Unsuitable value type`},
		{"enable_debug in server block", "server {\n  enable_debug = true\n}\n", `e.hcl:2:3: Unsupported argument`},
		// Nomad's batch_eval_gc_threshold: Drover's collector leaves a batch
		// job's evaluations to the job collection, so it has no such age.
		{"batch_eval_gc_threshold", "server {\n  batch_eval_gc_threshold = \"24h\"\n}\n", `e.hcl:2:3: Unsupported argument`},
		// Nomad's disk-based client GC settings are not implemented.
		{"gc_disk_usage_threshold", "client {\n  gc_disk_usage_threshold = 80\n}\n", `e.hcl:2:3: Unsupported argument`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := parseConfig(DefaultConfig(), "e.hcl", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error = %v; want it to contain %q", err, tc.err)
			}
		})
	}
}

func TestValidateGCSettings(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *Config)
		err    string
	}{
		{"gc_max_allocs zero", func(c *Config) { c.Client.GCMaxAllocs = 0 }, "client gc_max_allocs must be positive; got 0"},
		{"gc_max_allocs negative", func(c *Config) { c.Client.GCMaxAllocs = -3 }, "client gc_max_allocs must be positive"},
		{"gc_interval zero", func(c *Config) { c.Client.GCInterval = 0 }, "client gc_interval must be a positive duration"},
		{"job_gc_interval zero", func(c *Config) { c.Server.JobGCInterval = 0 }, "server job_gc_interval must be a positive duration"},
		{"eval_gc_threshold zero", func(c *Config) { c.Server.EvalGCThreshold = 0 }, "server eval_gc_threshold must be a positive duration"},
		{"job_gc_threshold zero", func(c *Config) { c.Server.JobGCThreshold = 0 }, "server job_gc_threshold must be a positive duration"},
		{"node_gc_threshold negative", func(c *Config) { c.Server.NodeGCThreshold = -time.Hour }, "server node_gc_threshold must be a positive duration"},
		{"deployment_gc_threshold zero", func(c *Config) { c.Server.DeploymentGCThreshold = 0 }, "server deployment_gc_threshold must be a positive duration"},
		{"max_kill_timeout negative", func(c *Config) { c.Client.MaxKillTimeout = -time.Second }, "client max_kill_timeout must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DevConfig()
			if err := c.Validate(); err != nil {
				t.Fatalf("dev config invalid: %v", err)
			}
			tc.change(c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error = %v; want it to contain %q", err, tc.err)
			}
		})
	}
}

// A bad setting in a -config file fails LoadConfig with its position; a
// good one survives flags.
func TestLoadConfigGCSettings(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.hcl", "server {\n  eval_gc_threshold = \"2h\"\n}\nclient {\n  gc_interval = \"5m\"\n}\n")
	bad := writeFile(t, dir, "bad.hcl", "server {\n  node_gc_threshold = \"a day\"\n}\n")
	c, err := LoadConfig([]string{"-dev", "-config", good, "-http-port", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.EvalGCThreshold != 2*time.Hour || c.Client.GCInterval != 5*time.Minute || c.Server.JobGCThreshold != 4*time.Hour {
		t.Fatalf("server %+v client %+v", c.Server, c.Client)
	}
	if !c.EnableDebug {
		t.Fatal("-dev without enable_debug in the file: debug off")
	}
	_, err = LoadConfig([]string{"-dev", "-config", bad}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bad.hcl:2:23: node_gc_threshold") {
		t.Fatalf("error = %v", err)
	}
}

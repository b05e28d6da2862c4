package agent

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const fullHCL = `
data_dir   = "/var/lib/drover"
bind_addr  = "10.0.0.5"
name       = "s1"
datacenter = "east"
region     = "europe"
log_level  = "warn"
log_json   = true

ports {
  http = 5646
  rpc  = 5647
}

server {
  enabled          = true
  bootstrap_expect = 3
  num_schedulers   = 4
  job_tracked_versions = 9
  server_join {
    retry_join     = ["10.0.0.6", "10.0.0.7:5647"]
    retry_interval = "15s"
  }
}

client {
  enabled    = true
  servers    = ["10.0.0.5:5647"]
  node_class = "batch"
  node_pool  = "gpu"
  meta {
    rack = "r1"
    zone = "z2"
  }
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}
`

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		src   string
		check func(t *testing.T, c *Config)
		err   string // substring of the expected error; "" means success
	}{
		{
			name: "full", file: "full.hcl", src: fullHCL,
			check: func(t *testing.T, c *Config) {
				want := &Config{
					NodeName: "s1", Region: "europe", Datacenter: "east",
					DataDir: "/var/lib/drover", BindAddr: "10.0.0.5", LogLevel: "warn", LogJSON: true,
					Ports: Ports{HTTP: 5646, RPC: 5647},
					Server: ServerConfig{Enabled: true, BootstrapExpect: 3, NumSchedulers: 4, JobTrackedVersions: 9,
						RetryJoin: []string{"10.0.0.6", "10.0.0.7:5647"}, RetryInterval: 15 * time.Second,
						JobGCInterval: 5 * time.Minute, EvalGCThreshold: time.Hour, JobGCThreshold: 4 * time.Hour,
						NodeGCThreshold: 24 * time.Hour, DeploymentGCThreshold: time.Hour},
					Client: ClientConfig{Enabled: true, Servers: []string{"10.0.0.5:5647"}, NodeClass: "batch", NodePool: "gpu",
						Meta:       map[string]string{"rack": "r1", "zone": "z2"},
						GCInterval: time.Minute, GCRetention: time.Hour, GCMaxAllocs: 50},
					Plugins: map[string]*PluginConfig{"raw_exec": {Enabled: true}},
					Limits:  DefaultLimits(),
					Files:   []string{"full.hcl"},
				}
				if !reflect.DeepEqual(c, want) {
					t.Fatalf("got  %+v\nwant %+v", c, want)
				}
				if err := c.Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
			},
		},
		{
			name: "partial keeps defaults", file: "p.hcl", src: "server {\n  enabled = true\n}\n",
			check: func(t *testing.T, c *Config) {
				if !c.Server.Enabled || c.Ports.HTTP != DefaultHTTPPort || c.Region != "global" || c.Server.RetryInterval != DefaultRetryInterval {
					t.Fatalf("unexpected config %+v", c)
				}
			},
		},
		{
			name: "json", file: "c.json", src: `{"data_dir": "/d", "ports": {"http": 1234}, "server": {"enabled": true}}`,
			check: func(t *testing.T, c *Config) {
				if c.DataDir != "/d" || c.Ports.HTTP != 1234 || c.Ports.RPC != DefaultRPCPort || !c.Server.Enabled {
					t.Fatalf("unexpected config %+v", c)
				}
			},
		},
		{name: "unknown top-level attribute", file: "u.hcl", src: "data_dir = \"/d\"\nbogus = 1\n",
			err: "u.hcl:2:1: Unsupported argument"},
		{name: "unknown nested attribute", file: "n.hcl", src: "server {\n  enabled = true\n  bootstrap = 3\n}\n",
			err: "n.hcl:3:3: Unsupported argument"},
		{name: "unknown block", file: "b.hcl", src: "\n\ntelemetry {\n}\n",
			err: "b.hcl:3:1: Unsupported block type"},
		{name: "unknown plugin setting", file: "pl.hcl", src: "plugin \"raw_exec\" {\n  config {\n    enabled = true\n    volumes = true\n  }\n}\n",
			err: "pl.hcl:4:5: Unsupported argument"},
		{name: "unknown plugin", file: "pd.hcl", src: "plugin \"podman\" {\n}\n",
			err: `pd.hcl:1:8: plugin "podman" is not supported`},
		{name: "wrong type", file: "t.hcl", src: "ports {\n  http = \"abc\"\n}\n",
			err: "t.hcl:2:11: Unsuitable value type"},
		{name: "bad duration", file: "d.hcl", src: "server {\n  server_join {\n    retry_interval = \"soon\"\n  }\n}\n",
			err: "d.hcl:3:22: retry_interval"},
		{
			name: "client settings", file: "cl.hcl",
			src: "client {\n  enabled = true\n  servers = [\"a\"]\n  gc_retention = \"2h\"\n  gc_max_allocs = 7\n  max_kill_timeout = \"30s\"\n" +
				"  reserved {\n    cpu = 500\n    memory = 512\n    disk = 1024\n  }\n}\nplugin \"mock_driver\" {\n  config {\n    enabled = true\n  }\n}\n",
			check: func(t *testing.T, c *Config) {
				cl := c.Client
				if cl.GCRetention != 2*time.Hour || cl.GCMaxAllocs != 7 || cl.MaxKillTimeout != 30*time.Second ||
					!reflect.DeepEqual(cl.Reserved, &ReservedConfig{CPU: 500, MemoryMB: 512, DiskMB: 1024}) || !c.PluginEnabled(PluginMock) {
					t.Fatalf("client config %+v plugins %v", cl, c.Plugins)
				}
			},
		},
		{
			name: "client network", file: "net.hcl",
			src: "client {\n  enabled = true\n  network_interface = \"eth0\"\n  min_dynamic_port = 21000\n  max_dynamic_port = 21999\n" +
				"  reserved {\n    reserved_ports = \"22,80,8000-8100\"\n  }\n" +
				"  host_network \"public\" {\n    cidr = \"203.0.113.0/24\"\n    reserved_ports = \"443\"\n  }\n" +
				"  host_network \"lan\" {\n    interface = \"eth1\"\n  }\n}\n",
			check: func(t *testing.T, c *Config) {
				cl := c.Client
				want := []HostNetworkConfig{{Name: "public", CIDR: "203.0.113.0/24", ReservedPorts: "443"}, {Name: "lan", Interface: "eth1"}}
				if cl.NetworkInterface != "eth0" || cl.MinDynamicPort != 21000 || cl.MaxDynamicPort != 21999 ||
					cl.Reserved.ReservedPorts != "22,80,8000-8100" || !reflect.DeepEqual(cl.HostNetworks, want) {
					t.Fatalf("client config %+v", cl)
				}
				var problems []string
				c.validateClientNetwork(func(f string, a ...any) { problems = append(problems, f) })
				if len(problems) > 0 {
					t.Fatal(problems)
				}
			},
		},
		{
			name: "client host volumes", file: "vol.hcl",
			src: "client {\n  enabled = true\n  host_volume \"pgdata\" {\n    path = \"/srv/pg\"\n  }\n" +
				"  host_volume \"certs\" {\n    path = \"/etc/ssl/certs\"\n    read_only = true\n  }\n}\n",
			check: func(t *testing.T, c *Config) {
				want := []HostVolumeConfig{{Name: "pgdata", Path: "/srv/pg"}, {Name: "certs", Path: "/etc/ssl/certs", ReadOnly: true}}
				if !reflect.DeepEqual(c.Client.HostVolumes, want) {
					t.Fatalf("host volumes %+v", c.Client.HostVolumes)
				}
			},
		},
		{name: "host volume without a path", file: "v.hcl", src: "client {\n  host_volume \"x\" {\n  }\n}\n", err: "v.hcl:2:"},
		{name: "bad gc retention", file: "g.hcl", src: "client {\n  gc_retention = \"later\"\n}\n", err: "g.hcl:2:18: gc_retention"},
		{name: "syntax error", file: "s.hcl", src: "server {\n", err: "s.hcl:1:"},
		{name: "duplicate block", file: "dup.hcl", src: "ports {\n}\nports {\n}\n", err: "dup.hcl:3:1: Duplicate ports block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			err := parseConfig(c, tc.file, []byte(tc.src))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v; want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseConfig: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "base.hcl", fullHCL)
	over := writeFile(t, dir, "over.hcl", "region = \"asia\"\nports {\n  rpc = 6647\n}\n")
	confDir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, confDir, "10-a.hcl", "data_dir = \"/a\"\nserver {\n  enabled = true\n}\n")
	writeFile(t, confDir, "20-b.hcl", "data_dir = \"/b\"\n")
	writeFile(t, confDir, "README.md", "not config")
	bad := writeFile(t, dir, "bad.hcl", "server {\n  enabled = true\n  wat = 1\n}\n")

	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, c *Config)
		err   string
	}{
		{
			name: "file then later file",
			args: []string{"-config", base, "-config", over},
			check: func(t *testing.T, c *Config) {
				if c.Region != "asia" || c.Ports.RPC != 6647 || c.Ports.HTTP != 5646 || c.Datacenter != "east" {
					t.Fatalf("later file did not override only what it sets: %+v", c)
				}
			},
		},
		{
			name: "flags override file",
			args: []string{"-config", base, "-http-port", "7000", "-region", "r2", "-bootstrap-expect", "5",
				"-retry-join", "a:1", "-retry-join", "b", "-log-level", "debug", "-node", "n9", "-num-schedulers", "0"},
			check: func(t *testing.T, c *Config) {
				if c.Ports.HTTP != 7000 || c.Region != "r2" || c.Server.BootstrapExpect != 5 || c.LogLevel != "debug" ||
					c.NodeName != "n9" || c.Server.NumSchedulers != 0 || c.Ports.RPC != 5647 {
					t.Fatalf("flags did not override: %+v", c)
				}
				if !reflect.DeepEqual(c.Server.RetryJoin, []string{"a:1", "b"}) {
					t.Fatalf("retry join = %v", c.Server.RetryJoin)
				}
				if got := c.joinAddrs(); !reflect.DeepEqual(got, []string{"a:1", "b:4647"}) {
					t.Fatalf("joinAddrs = %v", got)
				}
			},
		},
		{
			name: "unset flag defaults do not override file",
			args: []string{"-config", base},
			check: func(t *testing.T, c *Config) {
				if c.Ports.HTTP != 5646 || c.BindAddr != "10.0.0.5" || !c.LogJSON {
					t.Fatalf("flag defaults overrode the file: %+v", c)
				}
			},
		},
		{
			name: "directory in name order",
			args: []string{"-config", confDir},
			check: func(t *testing.T, c *Config) {
				if c.DataDir != "/b" || !c.Server.Enabled || len(c.Files) != 2 {
					t.Fatalf("directory load: %+v", c)
				}
			},
		},
		{
			name: "dev",
			args: []string{"-dev"},
			check: func(t *testing.T, c *Config) {
				if !c.DevMode || !c.Server.Enabled || c.Server.BootstrapExpect != 1 || c.BindAddr != "127.0.0.1" ||
					c.LogLevel != "debug" || c.DataDir != "" {
					t.Fatalf("dev config: %+v", c)
				}
			},
		},
		{
			name: "dev with ports 0",
			args: []string{"-dev", "-http-port", "0", "-rpc-port", "0"},
			check: func(t *testing.T, c *Config) {
				if c.Ports.HTTP != 0 || c.Ports.RPC != 0 {
					t.Fatalf("ports: %+v", c.Ports)
				}
			},
		},
		{
			name: "client flags",
			args: []string{"-client", "-data-dir", "/d", "-servers", "10.0.0.1,10.0.0.2:5000", "-servers", "h3",
				"-node-class", "gpu", "-node-pool", "ml", "-meta", "rack=r9", "-meta", "zone=a=b"},
			check: func(t *testing.T, c *Config) {
				if !c.Client.Enabled || c.Server.Enabled || c.Client.NodeClass != "gpu" || c.Client.NodePool != "ml" ||
					!reflect.DeepEqual(c.Client.Meta, map[string]string{"rack": "r9", "zone": "a=b"}) {
					t.Fatalf("client flags: %+v", c.Client)
				}
				if got := c.clientServers(); !reflect.DeepEqual(got, []string{"10.0.0.1:4647", "10.0.0.2:5000", "h3:4647"}) {
					t.Fatalf("clientServers = %v", got)
				}
			},
		},
		{
			name: "dev runs a client with both drivers",
			args: []string{"-dev"},
			check: func(t *testing.T, c *Config) {
				if !c.Client.Enabled || !c.PluginEnabled(PluginRawExec) || !c.PluginEnabled(PluginMock) {
					t.Fatalf("dev client: %+v %v", c.Client, c.Plugins)
				}
			},
		},
		{name: "client without servers", args: []string{"-client", "-data-dir", "/d"}, err: "needs servers"},
		{name: "client without data dir", args: []string{"-client", "-servers", "a"}, err: "data_dir is required for a client"},
		{name: "client bad server", args: []string{"-client", "-data-dir", "/d", "-servers", "h:x"}, err: `client servers "h:x"`},
		{name: "bad meta", args: []string{"-client", "-data-dir", "/d", "-servers", "a", "-meta", "novalue"}, err: "want key=value"},
		{name: "unknown setting in file", args: []string{"-config", bad}, err: "bad.hcl:3:3: Unsupported argument"},
		{name: "missing file", args: []string{"-config", filepath.Join(dir, "nope.hcl")}, err: "no such file"},
		{name: "nothing enabled", args: []string{}, err: "must run a server or a client"},
		{name: "server without data dir", args: []string{"-server"}, err: "data_dir is required"},
		{name: "bootstrap without server", args: []string{"-bootstrap-expect", "3", "-config", over, "-data-dir", "/x"},
			err: "bootstrap_expect is set but the server is not enabled"},
		{name: "bad port", args: []string{"-dev", "-http-port", "70000"}, err: "ports.http must be between 0 and 65535"},
		{name: "negative port", args: []string{"-dev", "-rpc-port", "-1"}, err: "ports.rpc must be between"},
		{name: "same ports", args: []string{"-dev", "-rpc-port", "4646"}, err: "must differ"},
		{name: "bad log level", args: []string{"-dev", "-log-level", "loud"}, err: "log_level"},
		{name: "bad bind", args: []string{"-dev", "-bind", "localhost"}, err: "bind_addr must be an IP"},
		{name: "dev multi-server", args: []string{"-dev", "-bootstrap-expect", "3"}, err: "dev mode runs a single server"},
		{name: "bad retry join", args: []string{"-dev", "-retry-join", "h:notaport"}, err: `retry_join "h:notaport"`},
		{name: "stray argument", args: []string{"-dev", "extra"}, err: "unexpected arguments: extra"},
		{name: "unknown flag", args: []string{"-bogus"}, err: "flag provided but not defined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.args, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v; want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.Server.BootstrapExpect = -1
	c.Ports.HTTP = -5
	c.LogLevel = "nope"
	err := c.Validate()
	if err == nil {
		t.Fatal("expected an error")
	}
	for _, want := range []string{"must run a server", "bootstrap_expect must not be negative", "ports.http", "log_level"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestValidateClientNetwork(t *testing.T) {
	c := DefaultConfig()
	c.Client.Enabled = true
	c.Client.MinDynamicPort, c.Client.MaxDynamicPort = 30000, 25000
	c.Client.Reserved = &ReservedConfig{ReservedPorts: "22,90-80"}
	c.Client.HostNetworks = []HostNetworkConfig{{Name: "a"}, {Name: "b", CIDR: "nope"}, {Name: "b", Interface: "x", ReservedPorts: "70000"}}
	c.Client.HostVolumes = []HostVolumeConfig{{Name: "v", Path: "rel/dir"}, {Name: "v", Path: "/ok"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("expected an error")
	}
	for _, want := range []string{"min_dynamic_port (30000) must not be above max_dynamic_port (25000)",
		`reserved_ports: port range "90-80" runs backwards`, `host_network "a" needs a cidr or an interface`,
		`host_network "b": invalid cidr "nope"`, `host_network "b" is defined twice`, `port 70000 is not between 1 and 65535`,
		`client host_volume "v": path must be an absolute path; got "rel/dir"`, `client host_volume "v" is defined twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestExecPluginAndChrootEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.hcl")
	src := `data_dir = "/tmp/x"
client {
  enabled = true
  servers = ["127.0.0.1:4647"]
  chroot_env = {
    "/bin"     = "/bin"
    "/usr/lib" = "/usr/lib"
  }
}
plugin "exec" {
  config {
    no_pivot_root    = true
    default_pid_mode = "host"
    allow_caps       = ["chown", "net_raw"]
    pids_limit       = 100
  }
}
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	if err := LoadConfigFile(c, path); err != nil {
		t.Fatal(err)
	}
	ec := c.execConfig()
	if !ec.NoPivotRoot || ec.DefaultPidMode != "host" || ec.PidsLimit != 100 || len(ec.AllowCaps) != 2 ||
		len(ec.ChrootEnv) != 2 || ec.ChrootEnv["/usr/lib"] != "/usr/lib" {
		t.Fatalf("exec config %+v", ec)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"raw_exec option on exec": "plugin \"exec\" {\n  config {\n    enabled = true\n  }\n}\n",
		"exec option on raw_exec": "plugin \"raw_exec\" {\n  config {\n    no_pivot_root = true\n  }\n}\n",
	} {
		p := filepath.Join(dir, "bad.hcl")
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		err := LoadConfigFile(DefaultConfig(), p)
		if err == nil || !strings.Contains(err.Error(), "has no argument") {
			t.Errorf("%s: %v, want the option refused by name", name, err)
		}
	}
	c.Plugins[PluginExec].DefaultIpcMode = "shared"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "default_ipc_mode") {
		t.Fatalf("validate = %v, want default_ipc_mode refused", err)
	}
}

package agent

import (
	"strings"
	"testing"
)

// maxConfigFuzzInput bounds the config files the target tries; real ones
// are a few hundred bytes.
const maxConfigFuzzInput = 64 << 10

// FuzzParseConfig feeds arbitrary bytes to the agent's config file reader,
// as HCL and as JSON, onto the default config, then validates the result.
// Neither may panic, and the same file read twice gives the same answer.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(fullHCL), false)
	f.Add([]byte(`{"data_dir": "/d", "ports": {"http": 1234}, "server": {"enabled": true}}`), true)
	f.Add([]byte(`{"server": {"server_join": {"retry_join": ["a:1"], "retry_interval": "5s"}},
	  "client": {"meta": {"rack": "r1"}, "reserved": {"cpu": 100}},
	  "plugin": {"raw_exec": {"config": {"enabled": true}}}}`), true)
	f.Add([]byte("client {\n  enabled = true\n  servers = [\"a\"]\n  gc_retention = \"2h\"\n  gc_max_allocs = 7\n  max_kill_timeout = \"30s\"\n"+
		"  reserved {\n    cpu = 500\n    memory = 512\n    disk = 1024\n  }\n}\nplugin \"mock_driver\" {\n  config {\n    enabled = true\n  }\n}\n"), false)
	f.Add([]byte("server {\n  heartbeat_grace = \"10s\"\n  min_heartbeat_ttl = \"5s\"\n  job_gc_interval = \"5m\"\n"+
		"  eval_gc_threshold = \"1h\"\n  job_gc_threshold = \"4h\"\n  node_gc_threshold = \"24h\"\n}\nenable_debug = true\n"), false)
	f.Add([]byte("client {\n  meta {\n    a = \"${1+1}\"\n    b = 2\n  }\n}\n"), false)
	f.Add([]byte("client {\n  readiness {\n    command = \"/bin/check\"\n    args = [\"-q\"]\n    interval = \"5s\"\n"+
		"    timeout = \"10s\"\n    recheck = true\n  }\n}\n"), false)
	f.Add([]byte(`{"client": {"readiness": {"command": "c", "interval": "-1s"}}}`), true)
	// Nesting that overflowed the parser's stack before internal/hcllimit.
	f.Add([]byte("client { servers = "+strings.Repeat("[", 60000)+" }"), false)
	f.Add([]byte(`{"client": `+strings.Repeat(`{"a": `, 10000)+`1`+strings.Repeat("}", 10000)+`}`), true)
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		if len(data) > maxConfigFuzzInput {
			t.Skip()
		}
		name := "agent.hcl"
		if asJSON {
			name = "agent.json"
		}
		c1, c2 := DefaultConfig(), DefaultConfig()
		err1 := parseConfig(c1, name, data)
		err2 := parseConfig(c2, name, data)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("reading the same file twice differs:\n%v\n%v", err1, err2)
		}
		if err1 != nil {
			return
		}
		_ = c1.Validate()
	})
}

// Found by FuzzParseConfig: gohcl reports unknown arguments in map order,
// so the same file's error listed them differently from run to run; and
// of several bad meta values, the one reported was chosen by map order.
// Errors now come in file order, and meta values are read in name order.
func TestFuzzRegressionConfigErrorOrder(t *testing.T) {
	cases := []struct{ src, first string }{
		{"a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n", `c.hcl:1:1: Unsupported argument; An argument named "a"`},
		{"client {\n  meta {\n    z = [1]\n    a = [2]\n    m = [3]\n  }\n}\n", "c.hcl:4:9: "},
	}
	for _, tc := range cases {
		want := parseConfig(DefaultConfig(), "c.hcl", []byte(tc.src))
		if want == nil || !strings.HasPrefix(want.Error(), tc.first) {
			t.Fatalf("%q: err = %v; want it to start with %q", tc.src, want, tc.first)
		}
		for range 20 {
			if err := parseConfig(DefaultConfig(), "c.hcl", []byte(tc.src)); err.Error() != want.Error() {
				t.Fatalf("%q: errors differ:\n%v\n%v", tc.src, want, err)
			}
		}
	}
}

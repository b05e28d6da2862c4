package agent

import (
	"bytes"
	"testing"
)

// maxConfigFuzzInput bounds the config files the target tries; real ones
// are a few hundred bytes.
const maxConfigFuzzInput = 64 << 10

// maxConfigFuzzNesting skips inputs nested deeper than this: HCL's parser
// recurses per level and overflows the stack on deep enough input (see
// jobspec's maxFuzzNesting; the fix is being made in branch h-limits).
// TODO(h-limits): drop this skip once the depth pre-scan lands.
const maxConfigFuzzNesting = 1000

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
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		if len(data) > maxConfigFuzzInput || configNesting(data) > maxConfigFuzzNesting {
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

// configNesting is the deepest nesting of ( [ { in src, counting brackets
// in strings too (an over-count only skips more inputs).
func configNesting(src []byte) int {
	depth, deepest := 0, 0
	for _, c := range src {
		if bytes.IndexByte([]byte("([{"), c) >= 0 {
			depth++
			deepest = max(deepest, depth)
		} else if bytes.IndexByte([]byte(")]}"), c) >= 0 {
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
)

// TestParseNodeQuarantine: server { node_quarantine { ... } } in HCL and
// JSON, its defaults (on, the server's package defaults), and errors that
// name the setting and its position.
func TestParseNodeQuarantine(t *testing.T) {
	if q := DefaultConfig().Server.NodeQuarantine; q != (server.NodeQuarantineConfig{}) {
		t.Fatalf("default: %+v (want on, with the server's defaults)", q)
	}
	want := server.NodeQuarantineConfig{Threshold: 5, Window: 20 * time.Minute, Cooldown: time.Minute}
	for name, src := range map[string]string{
		"q.hcl":  "server {\n  node_quarantine {\n    threshold = 5\n    window = \"20m\"\n    cooldown = \"1m\"\n    enabled = true\n  }\n}\n",
		"q.json": `{"server": {"node_quarantine": {"threshold": 5, "window": "20m", "cooldown": "1m", "enabled": true}}}`,
	} {
		c := DefaultConfig()
		if err := parseConfig(c, name, []byte(src)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Server.NodeQuarantine != want {
			t.Fatalf("%s: %+v", name, c.Server.NodeQuarantine)
		}
	}
	c := DefaultConfig()
	if err := parseConfig(c, "off.hcl", []byte("server {\n  node_quarantine {\n    enabled = false\n  }\n}\n")); err != nil {
		t.Fatal(err)
	}
	if !c.Server.NodeQuarantine.Disabled {
		t.Fatal("enabled = false left the quarantine on")
	}
	for _, tc := range []struct{ name, src, err string }{
		{"threshold", "server {\n  node_quarantine {\n    threshold = 0\n  }\n}\n", `e.hcl:3:17: threshold: must be at least 1`},
		{"window", "server {\n  node_quarantine {\n    window = \"soon\"\n  }\n}\n", `e.hcl:3:14: window: must be a positive duration`},
		{"cooldown", "server {\n  node_quarantine {\n    cooldown = \"0s\"\n  }\n}\n", `e.hcl:3:16: cooldown: must be a positive duration`},
		{"unknown", "server {\n  node_quarantine {\n    grace = \"1m\"\n  }\n}\n", `e.hcl:3:5: Unsupported argument`},
	} {
		err := parseConfig(DefaultConfig(), "e.hcl", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error = %v; want it to contain %q", tc.name, err, tc.err)
		}
	}
}

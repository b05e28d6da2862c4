package agent

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client"
)

// TestParseReadinessConfig reads client { readiness { ... } } in HCL and
// JSON, fills the defaults, and refuses bad values naming the field and
// its position.
func TestParseReadinessConfig(t *testing.T) {
	cases := []struct {
		name, file, src string
		want            *client.ReadinessConfig
		err             string // substring of the expected error
	}{
		{name: "full", file: "r.hcl", src: `client {
  readiness {
    command  = "/usr/local/bin/node-ready"
    args     = ["-disk", "/data"]
    interval = "5s"
    timeout  = "2s"
    recheck  = true
  }
}
`, want: &client.ReadinessConfig{Command: "/usr/local/bin/node-ready", Args: []string{"-disk", "/data"},
			Interval: 5 * time.Second, Timeout: 2 * time.Second, Recheck: true}},
		{name: "defaults", file: "r.hcl", src: "client {\n  readiness {\n    command = \"check\"\n  }\n}\n",
			want: &client.ReadinessConfig{Command: "check", Interval: client.DefaultReadinessInterval, Timeout: client.DefaultReadinessTimeout}},
		{name: "json", file: "r.json", src: `{"client": {"readiness": {"command": "/bin/true", "args": ["x"], "timeout": "30s"}}}`,
			want: &client.ReadinessConfig{Command: "/bin/true", Args: []string{"x"}, Interval: client.DefaultReadinessInterval, Timeout: 30 * time.Second}},
		{name: "none", file: "r.hcl", src: "client {\n  enabled = true\n}\n"},
		{name: "missing command", file: "r.hcl", src: "client {\n  readiness {\n    interval = \"5s\"\n  }\n}\n",
			err: `r.hcl:2:13: Missing required argument; The argument "command" is required`},
		{name: "empty command", file: "r.hcl", src: "client {\n  readiness {\n    command = \" \"\n  }\n}\n",
			err: "r.hcl:3:15: readiness.command: must name the command to run"},
		{name: "bad interval", file: "r.hcl", src: "client {\n  readiness {\n    command = \"c\"\n    interval = \"soon\"\n  }\n}\n",
			err: `r.hcl:4:16: readiness.interval: must be a positive duration such as "10s"; got "soon"`},
		{name: "zero timeout", file: "r.hcl", src: "client {\n  readiness {\n    command = \"c\"\n    timeout = \"0s\"\n  }\n}\n",
			err: `r.hcl:4:15: readiness.timeout: must be a positive duration`},
		{name: "unknown field", file: "r.hcl", src: "client {\n  readiness {\n    command = \"c\"\n    period = \"5s\"\n  }\n}\n",
			err: `r.hcl:4:5: Unsupported argument; An argument named "period"`},
		{name: "args not a list", file: "r.hcl", src: "client {\n  readiness {\n    command = \"c\"\n    args = 3\n  }\n}\n",
			err: "r.hcl:4:"},
		{name: "two blocks", file: "r.hcl", src: "client {\n  readiness {\n    command = \"a\"\n  }\n  readiness {\n    command = \"b\"\n  }\n}\n",
			err: "r.hcl:5:"},
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
			if !reflect.DeepEqual(c.Client.Readiness, tc.want) {
				t.Fatalf("readiness %+v, want %+v", c.Client.Readiness, tc.want)
			}
		})
	}
}

// TestReadinessConfigLaterFile: a later file's block changes only what it
// sets; Validate refuses a block built without a command or durations.
func TestReadinessConfigLaterFile(t *testing.T) {
	c := DefaultConfig()
	if err := parseConfig(c, "a.hcl", []byte("client {\n  readiness {\n    command = \"a\"\n    args = [\"1\"]\n    timeout = \"3s\"\n  }\n}\n")); err != nil {
		t.Fatal(err)
	}
	if err := parseConfig(c, "b.hcl", []byte("client {\n  readiness {\n    command = \"b\"\n    recheck = true\n  }\n}\n")); err != nil {
		t.Fatal(err)
	}
	want := &client.ReadinessConfig{Command: "b", Args: []string{"1"}, Interval: client.DefaultReadinessInterval, Timeout: 3 * time.Second, Recheck: true}
	if !reflect.DeepEqual(c.Client.Readiness, want) {
		t.Fatalf("readiness %+v, want %+v", c.Client.Readiness, want)
	}
	c.Client.Enabled, c.Server.Enabled = true, true
	c.Client.Readiness = &client.ReadinessConfig{}
	err := c.Validate()
	for _, field := range []string{"readiness.command", "readiness.interval", "readiness.timeout"} {
		if err == nil || !strings.Contains(err.Error(), "client "+field) {
			t.Fatalf("Validate: %v; want it to name %s", err, field)
		}
	}
}

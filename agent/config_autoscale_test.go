package agent

import (
	"strings"
	"testing"
	"time"
)

// TestConfigAutoscaleProvider: server { autoscale_provider } and
// autoscale_interval, client cpu_total_compute and memory_total_mb are
// read; a provider type other than local, or negative totals, are
// refused by name.
func TestConfigAutoscaleProvider(t *testing.T) {
	c := DefaultConfig()
	c.DataDir = "/tmp/drover-config-test"
	err := parseConfig(c, "a.hcl", []byte(`server {
  enabled = true
  autoscale_interval = "250ms"
  autoscale_provider "local" {
    dir = "/tmp/x"
    binary = "/bin/drover"
    quota = 4
    client_config = "plugin \"mock_driver\" {}"
  }
}
client {
  cpu_total_compute = 2000
  memory_total_mb = 1024
}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Server.AutoscaleProviders
	if len(p) != 1 || p[0].Name != "local" || p[0].Type != "local" || p[0].Dir != "/tmp/x" || p[0].Binary != "/bin/drover" ||
		p[0].Quota != 4 || !strings.Contains(p[0].ClientConfig, "mock_driver") || c.Server.AutoscaleInterval != 250*time.Millisecond {
		t.Fatalf("server config %+v", c.Server)
	}
	if c.Client.CPUTotalCompute != 2000 || c.Client.MemoryTotalMB != 1024 {
		t.Fatalf("client totals %+v", c.Client)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"server {\n  autoscale_provider \"aws\" {}\n}\n",
		"server {\n  autoscale_provider \"x\" {\n    type = \"gce\"\n  }\n}\n",
		`client { cpu_total_compute = -1 }`,
	} {
		c := DefaultConfig()
		c.Server.Enabled, c.DataDir = true, "/tmp/drover-config-test"
		err := parseConfig(c, "a.hcl", []byte(src))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !(strings.Contains(err.Error(), "Drover does not support provider type") || strings.Contains(err.Error(), "cpu_total_compute")) {
			t.Errorf("%s: %v", src, err)
		}
	}
}

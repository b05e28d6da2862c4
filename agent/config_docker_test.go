package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver/docker"
)

func TestDockerPluginConfig(t *testing.T) {
	load := func(t *testing.T, src string) (*Config, error) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "agent.hcl")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		return c, LoadConfigFile(c, p)
	}
	c, err := load(t, `plugin "docker" {
  config {
    endpoint = "unix:///run/other.sock"
    allow_privileged = true
    pids_limit = 500
    volumes { enabled = true }
    gc {
      image       = false
      image_delay = "10m"
      container   = false
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	want := docker.Config{Endpoint: "unix:///run/other.sock", AllowPrivileged: true, VolumesEnabled: true, PidsLimit: 500,
		GC: docker.GCConfig{Image: false, ImageDelay: 10 * time.Minute, Container: false}}
	if got := *c.dockerConfig(); got != want {
		t.Fatalf("docker config %+v, want %+v", got, want)
	}
	if got := *DefaultConfig().dockerConfig(); got != docker.DefaultConfig() {
		t.Fatalf("default docker config %+v", got)
	}
	for _, tc := range []struct{ src, want string }{
		{`plugin "docker" { config { tls { cert = "x" } } }`, `"docker": tls: Drover does not support this docker plugin setting`},
		{`plugin "docker" { config { gc { dangling_containers { enabled = false } } } }`, `gc.dangling_containers: Drover does not support`},
		{`plugin "docker" { config { volumes { selinuxlabel = "z" } } }`, `volumes.selinuxlabel: Drover does not support`},
		{`plugin "docker" { config { gc { image_delay = "soon" } } }`, `image_delay: must be a positive duration`},
		{`plugin "docker" { config { enabled = true } }`, `Drover does not support this setting for docker`},
		{`plugin "raw_exec" { config { endpoint = "x" } }`, `plugin "raw_exec" has no argument "endpoint"`},
	} {
		if _, err := load(t, tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

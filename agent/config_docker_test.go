package agent

import (
	"fmt"
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
	for _, tc := range []struct{ plugin, inner, want, src string }{
		{"docker", "tls {\n cert = \"x\"\n}", `"docker": tls: Drover does not support this docker plugin setting`, ""},
		{"docker", "gc {\n dangling_containers {\n enabled = false\n }\n}", `gc.dangling_containers: Drover does not support`, ""},
		{"docker", "volumes {\n selinuxlabel = \"z\"\n}", `volumes.selinuxlabel: Drover does not support`, ""},
		{"docker", "gc {\n image_delay = \"soon\"\n}", `image_delay: must be a positive duration`, ""},
		{"docker", "enabled = true", `Drover does not support this setting for docker`, ""},
		{"docker", "nvidia_runtime = \"x\"", `nvidia_runtime: Drover does not support`, ""},
		{"raw_exec", "endpoint = \"x\"", `plugin "raw_exec" has no argument "endpoint"`, ""},
	} {
		tc.src = fmt.Sprintf("plugin %q {\n  config {\n%s\n  }\n}\n", tc.plugin, tc.inner)
		if _, err := load(t, tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

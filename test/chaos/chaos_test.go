package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChaosShort is the suite's short version for `make test`: three
// scenarios once each (a leader partition, a leader SIGKILL and a client
// cut off past its heartbeat TTL), each on a fresh cluster of agent
// processes in network namespaces, with every checker. It needs root and
// ip netns, and skips with the reason otherwise; `make chaos` runs the
// full suite.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite runs agent processes for about 2 minutes (not in -short)")
	}
	if why := Available(); why != "" {
		t.Skip("skipping the chaos suite: " + why)
	}
	bin := filepath.Join(t.TempDir(), "drover")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/drover")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building drover: %v\n%s", err, out)
	}
	results := t.TempDir()
	if dir := os.Getenv("CHAOS_RESULTS"); dir != "" {
		results = dir // keep failing runs somewhere that outlives the test
	}
	for i, name := range []string{"leader-partition", "leader-kill", "client-partition"} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig(bin, results, name, int64(i+1))
			cfg.Warmup, cfg.Hold, cfg.After = 3*time.Second, 5*time.Second, 2*time.Second
			cfg.Log = t.Logf
			res, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(Summary(res))
			if !res.Pass {
				t.Fatalf("%s failed (history, logs and visualisation in %s)", name, res.Dir)
			}
		})
	}
}

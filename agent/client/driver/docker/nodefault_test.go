package docker

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

// TestStartDaemonDownIsNodeFault: a daemon that cannot be reached is the
// node's fault (driver.ErrNodeFault), counted toward its quarantine.
func TestStartDaemonDownIsNodeFault(t *testing.T) {
	d := New(Config{Endpoint: "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")})
	t.Cleanup(func() { d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := d.Start(ctx, testTask(t, map[string]any{"image": "busybox:1.36"}))
	if err == nil || !errors.Is(err, driver.ErrNodeFault) {
		t.Fatalf("start with the daemon down: %v, want a node fault", err)
	}
}

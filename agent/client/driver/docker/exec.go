package docker

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/driver"
)

var _ driver.Execer = (*Driver)(nil)

// execPoll is how often a running exec is checked.
const execPoll = 100 * time.Millisecond

// Exec implements driver.Execer (a template's change_script): the command
// runs in the task's running container, with the task's environment, and
// its exit code is returned. When ctx ends first, its process is killed.
func (d *Driver) Exec(ctx context.Context, cfg *driver.TaskConfig, command string, args []string) (int, error) {
	if d.clientErr != nil {
		return -1, d.clientErr
	}
	created, err := d.client.ExecCreate(ctx, containerName(cfg), client.ExecCreateOptions{
		Cmd: append([]string{command}, args...), Env: envList(cfg.Env)})
	if err != nil {
		return -1, fmt.Errorf("creating the exec in the task's container: %w", err)
	}
	if _, err := d.client.ExecStart(ctx, created.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return -1, fmt.Errorf("starting the exec in the task's container: %w", err)
	}
	t := time.NewTicker(execPoll)
	defer t.Stop()
	for {
		ins, err := d.client.ExecInspect(context.Background(), created.ID, client.ExecInspectOptions{})
		if err != nil {
			return -1, fmt.Errorf("inspecting the exec: %w", err)
		}
		if !ins.Running { // a detached start returns once the process runs
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			if ins.PID > 0 {
				_ = syscall.Kill(ins.PID, syscall.SIGKILL)
			}
			return -1, ctx.Err()
		case <-t.C:
		}
	}
}

package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/drover-project/drover/agent/client/driver"
)

var _ driver.Execer = (*Driver)(nil)

// Exec implements driver.Execer (a template's change_script): the
// command runs in the running task's file system (its root, reached
// through /proc/<pid>/root, with the task's mounts), as the task's user,
// with the task's environment, in the task's cgroup. It does not join the
// task's PID and IPC namespaces. It fails when the task is not running.
func (d *Driver) Exec(ctx context.Context, cfg *driver.TaskConfig, command string, args []string) (int, error) {
	if d.cgroups == nil {
		return -1, errors.New(d.fpErr)
	}
	g, err := d.cgroups.Group(cgroupName(cfg.ID))
	if err != nil {
		return -1, err
	}
	pids, err := g.Pids()
	if err != nil || len(pids) == 0 {
		return -1, fmt.Errorf("exec: the task is not running")
	}
	root := filepath.Join("/proc", strconv.Itoa(pids[0]), "root")
	lc := &launchConfig{}
	if err := lc.setUser(cfg.User); err != nil {
		return -1, err
	}
	path := lookupIn(root, command)
	groups := make([]uint32, 0, len(lc.Groups))
	for _, g := range lc.Groups {
		groups = append(groups, uint32(g))
	}
	cmd := osexec.Command(path, args...)
	cmd.Env = chrootEnv(cfg.Env)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot: root, Setpgid: true,
		Credential: &syscall.Credential{Uid: uint32(lc.UID), Gid: uint32(lc.GID), Groups: groups},
	}
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	_ = g.Add(cmd.Process.Pid) // counted against the task's limits, as Nomad
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return -1, ctx.Err()
	}
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// lookupIn finds command inside root as the task's init does
// (lookupTaskBin) and returns its path in the chroot.
func lookupIn(root, command string) string {
	cands := []string{filepath.Join("/local", command), filepath.Join("/", command)}
	if !strings.Contains(command, "/") {
		for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
			cands = append(cands, filepath.Join(d, command))
		}
	}
	for _, c := range cands {
		if st, err := os.Stat(filepath.Join(root, c)); err == nil && st.Mode().IsRegular() {
			return c
		}
	}
	return filepath.Join("/", command)
}

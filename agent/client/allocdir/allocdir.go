package allocdir

import (
	"fmt"
	"os"
	"path/filepath"
)

// Names inside an allocation directory.
const (
	SharedDirName  = "alloc"
	LogDirName     = "logs"
	DataDirName    = "data"
	TmpDirName     = "tmp"
	TaskLocalName  = "local"
	TaskSecretName = "secrets"
)

// Log types.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// AllocDir is one allocation's directory tree.
type AllocDir struct {
	// Dir is <alloc root>/<alloc id>.
	Dir string
	// SharedDir is Dir/alloc.
	SharedDir string
	// LogDir is Dir/alloc/logs.
	LogDir string
}

// New returns the layout of allocation allocID under root; nothing is
// created until Build.
func New(root, allocID string) (*AllocDir, error) {
	if !filepath.IsLocal(allocID) || filepath.Base(allocID) != allocID {
		return nil, fmt.Errorf("allocdir: bad allocation ID %q", allocID)
	}
	dir := filepath.Join(root, allocID)
	shared := filepath.Join(dir, SharedDirName)
	return &AllocDir{Dir: dir, SharedDir: shared, LogDir: filepath.Join(shared, LogDirName)}, nil
}

// Build creates the shared directories. It is idempotent.
func (d *AllocDir) Build() error {
	for _, p := range []string{d.Dir, d.SharedDir, d.LogDir,
		filepath.Join(d.SharedDir, DataDirName), filepath.Join(d.SharedDir, TmpDirName)} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("allocdir: %w", err)
		}
	}
	return nil
}

// Destroy removes the whole allocation directory. Whatever is mounted
// below it (a task's host volumes) is unmounted first, and nothing is
// removed while a mount stays: removing the tree would delete the host
// directory's files through it.
func (d *AllocDir) Destroy() error {
	if err := UnmountUnder(d.Dir); err != nil {
		return fmt.Errorf("allocdir: not removed, a mount below it remains: %w", err)
	}
	return os.RemoveAll(d.Dir)
}

// MoveData moves the ephemeral data of prev, the directory of the
// allocation this one replaces on the same node, into d (a sticky
// ephemeral disk, as Nomad): alloc/data, and the local directory of each
// of tasks. What prev lacks is skipped; d's own directories must still
// be empty. prev's tasks must be dead; its mounts are undone first.
func (d *AllocDir) MoveData(prev *AllocDir, tasks []string) error {
	if err := UnmountUnder(prev.Dir); err != nil {
		return fmt.Errorf("allocdir: moving data: %w", err)
	}
	pairs := [][2]string{{filepath.Join(prev.SharedDir, DataDirName), filepath.Join(d.SharedDir, DataDirName)}}
	for _, task := range tasks {
		from, err := prev.TaskDir(task)
		if err != nil {
			return err
		}
		to, err := d.TaskDir(task)
		if err != nil {
			return err
		}
		pairs = append(pairs, [2]string{from.LocalDir, to.LocalDir})
	}
	for _, p := range pairs {
		if err := moveDir(p[0], p[1]); err != nil {
			return fmt.Errorf("allocdir: moving %s: %w", p[0], err)
		}
	}
	return nil
}

// moveDir renames directory src to dst (an empty or missing directory);
// a missing or non-directory src moves nothing.
func moveDir(src, dst string) error {
	st, err := os.Lstat(src)
	if err != nil || !st.IsDir() {
		return nil
	}
	if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(src, dst)
}

// TaskDir is one task's directory tree.
type TaskDir struct {
	// Dir is <alloc dir>/<task>: the task's working directory.
	Dir string
	// LocalDir is Dir/local (NOMAD_TASK_DIR).
	LocalDir   string
	SecretsDir string
	TmpDir     string
}

// TaskDir returns the layout of a task's directory.
func (d *AllocDir) TaskDir(task string) (*TaskDir, error) {
	if !filepath.IsLocal(task) || filepath.Base(task) != task || task == SharedDirName {
		return nil, fmt.Errorf("allocdir: bad task name %q", task)
	}
	dir := filepath.Join(d.Dir, task)
	return &TaskDir{
		Dir: dir, LocalDir: filepath.Join(dir, TaskLocalName),
		SecretsDir: filepath.Join(dir, TaskSecretName), TmpDir: filepath.Join(dir, TmpDirName),
	}, nil
}

// Build creates the task's directories. It is idempotent.
func (t *TaskDir) Build() error {
	for _, p := range []string{t.Dir, t.LocalDir, t.SecretsDir, t.TmpDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("allocdir: %w", err)
		}
	}
	return os.Chmod(t.SecretsDir, 0o700)
}

// LogBase is the base name of a task's rotated log files
// ("<task>.stdout"); the files are LogBase + ".N" in LogDir.
func LogBase(task, logType string) string { return task + "." + logType }

// LogFIFO is the path of the FIFO a task writes logType output to.
func (d *AllocDir) LogFIFO(task, logType string) string {
	return filepath.Join(d.LogDir, "."+task+"."+logType+".fifo")
}

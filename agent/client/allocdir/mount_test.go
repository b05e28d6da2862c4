package allocdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// needRoot skips a test that bind mounts when the test does not run as
// root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root; this test runs as uid", os.Geteuid())
	}
}

// hostDir makes a directory standing for a host volume, with one file.
func hostDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMountVolumeBindReadOnly(t *testing.T) {
	needRoot(t)
	src := hostDir(t)
	taskDir := t.TempDir()
	kind, err := MountVolume(taskDir, "srv/data", src, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = UnmountUnder(taskDir) })
	if kind != "bind" {
		t.Fatalf("kind %q, want bind", kind)
	}
	got, err := os.ReadFile(filepath.Join(taskDir, "srv/data/hello.txt"))
	if err != nil || string(got) != "from the host\n" {
		t.Fatalf("read through the mount: %q, %v", got, err)
	}
	err = os.WriteFile(filepath.Join(taskDir, "srv/data/new.txt"), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write to a read-only mount: %v, want EROFS", err)
	}
	if on, err := IsMountPoint(filepath.Join(taskDir, "srv/data")); err != nil || !on {
		t.Fatalf("IsMountPoint = %v, %v", on, err)
	}
	// Mounting again (a restored task) leaves the mount as it is.
	if _, err := MountVolume(taskDir, "srv/data", src, true); err != nil {
		t.Fatal(err)
	}
	if err := UnmountUnder(taskDir); err != nil {
		t.Fatal(err)
	}
	if on, _ := IsMountPoint(filepath.Join(taskDir, "srv/data")); on {
		t.Fatalf("still mounted after UnmountUnder")
	}
}

func TestMountVolumeWritable(t *testing.T) {
	needRoot(t)
	src := hostDir(t)
	taskDir := t.TempDir()
	if _, err := MountVolume(taskDir, "data", src, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = UnmountUnder(taskDir) })
	if err := os.WriteFile(filepath.Join(taskDir, "data/new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "new.txt")); err != nil {
		t.Fatalf("the write did not reach the host directory: %v", err)
	}
}

// TestMountVolumeStaysInTaskDir: a symlink left in the task directory
// that points out of it cannot carry the mount out: the mount point is
// resolved inside the task directory.
func TestMountVolumeStaysInTaskDir(t *testing.T) {
	needRoot(t)
	src := hostDir(t)
	taskDir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(taskDir, "escape")); err != nil {
		t.Fatal(err)
	}
	_, err := MountVolume(taskDir, "escape/data", src, true)
	t.Cleanup(func() { _ = UnmountUnder(taskDir); _ = UnmountUnder(outside) })
	if err == nil {
		t.Fatalf("mounted through a symlink leading out of the task directory")
	}
	if on, _ := IsMountPoint(filepath.Join(outside, "data")); on {
		t.Fatalf("a mount appeared outside the task directory")
	}
}

// TestDestroyUnmountsFirst: removing an allocation directory with a
// volume mounted inside never deletes the host directory's files.
func TestDestroyUnmountsFirst(t *testing.T) {
	needRoot(t)
	src := hostDir(t)
	d, err := New(t.TempDir(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Build(); err != nil {
		t.Fatal(err)
	}
	td, _ := d.TaskDir("web")
	if err := td.Build(); err != nil {
		t.Fatal(err)
	}
	if _, err := MountVolume(td.Dir, "data", src, false); err != nil {
		t.Fatal(err)
	}
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "hello.txt")); err != nil {
		t.Fatalf("the host directory lost its file: %v", err)
	}
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Fatalf("allocation directory still there: %v", err)
	}
}

// TestMoveData moves alloc/data and the tasks' local directories of the
// previous allocation.
func TestMoveData(t *testing.T) {
	root := t.TempDir()
	prev, _ := New(root, "old")
	next, _ := New(root, "new")
	for _, d := range []*AllocDir{prev, next} {
		if err := d.Build(); err != nil {
			t.Fatal(err)
		}
	}
	ptd, _ := prev.TaskDir("web")
	if err := ptd.Build(); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(prev.SharedDir, DataDirName, "db"), "rows")
	write(filepath.Join(ptd.LocalDir, "cache"), "warm")
	if err := next.MoveData(prev, []string{"web", "gone"}); err != nil {
		t.Fatal(err)
	}
	ntd, _ := next.TaskDir("web")
	for p, want := range map[string]string{
		filepath.Join(next.SharedDir, DataDirName, "db"): "rows",
		filepath.Join(ntd.LocalDir, "cache"):             "warm",
	} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
}

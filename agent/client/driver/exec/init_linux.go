package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/drover-project/drover/structs/driverspec"
)

// runInit is the task's init: the first process of the task's new
// namespaces. It waits until the supervisor has put it in the task's
// cgroup, builds the chroot (read-only bind mounts of the chroot_env,
// /alloc, /proc, /dev, /sys) in its private mount namespace, enters it
// (pivot_root, or chroot with no_pivot_root), becomes the task's user
// with the task's capabilities and execs the command, which then is the
// namespace's PID 1. On failure it writes why on initErrFD and exits 127.
func runInit() int {
	errPipe := os.NewFile(initErrFD, "init-error")
	fail := func(err error) int {
		_, _ = errPipe.WriteString(err.Error())
		errPipe.Close()
		return 127
	}
	syscall.CloseOnExec(initSyncFD)
	syscall.CloseOnExec(initErrFD)
	var spec initSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return fail(fmt.Errorf("exec init: reading the task: %w", err))
	}
	if err := nullStdin(); err != nil {
		return fail(err)
	}
	var b [1]byte
	if n, _ := os.NewFile(initSyncFD, "init-sync").Read(b[:]); n != 1 {
		return fail(errors.New("exec init: the supervisor went away"))
	}
	lc := &spec.Launch
	if err := buildRoot(lc); err != nil {
		return fail(err)
	}
	if err := enterRoot(lc); err != nil {
		return fail(err)
	}
	path, err := lookupTaskBin(spec.Path)
	if err != nil {
		return fail(err)
	}
	// Credentials and capabilities are per thread; execve keeps this
	// thread's.
	runtime.LockOSThread()
	if err := dropPrivileges(lc); err != nil {
		return fail(err)
	}
	err = syscall.Exec(path, spec.Args, spec.Env)
	return fail(fmt.Errorf("failed to exec %q: %w", path, err))
}

// nullStdin points stdin at /dev/null once the spec is read.
func nullStdin() error {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer f.Close()
	return syscall.Dup3(int(f.Fd()), 0, 0)
}

// buildRoot mounts the task's chroot inside its directory. Every mount is
// in the task's own mount namespace, made private first so that nothing
// propagates to the host (where the task directory is removed with
// RemoveAll: a mount seen there would expose the host's files to it).
func buildRoot(lc *launchConfig) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("exec init: making mounts private: %w", err)
	}
	root := lc.TaskDir
	if err := syscall.Mount(root, root, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("exec init: binding the task directory: %w", err)
	}
	srcs := make([]string, 0, len(lc.Chroot))
	for src := range lc.Chroot {
		srcs = append(srcs, src)
	}
	// Shallower targets first, so /usr is mounted before /usr/local.
	sort.Slice(srcs, func(i, j int) bool {
		a, b := lc.Chroot[srcs[i]], lc.Chroot[srcs[j]]
		if strings.Count(a, "/") != strings.Count(b, "/") {
			return strings.Count(a, "/") < strings.Count(b, "/")
		}
		return a < b
	})
	for _, src := range srcs {
		st, err := os.Stat(src)
		if err != nil {
			continue // as Nomad: a chroot_env entry missing on the host is skipped
		}
		if err := bindMount(src, filepath.Join(root, lc.Chroot[src]), st.IsDir(), true); err != nil {
			return err
		}
	}
	if err := bindMount(lc.AllocDir, filepath.Join(root, "alloc"), true, false); err != nil {
		return err
	}
	const noExec = syscall.MS_NOSUID | syscall.MS_NOEXEC | syscall.MS_NODEV
	if err := mountFS("proc", filepath.Join(root, "proc"), noExec, ""); err != nil {
		return err
	}
	// /proc/kcore shows the host's memory: hide it, as Nomad does.
	_ = syscall.Mount("/dev/null", filepath.Join(root, "proc/kcore"), "", syscall.MS_BIND, "")
	if err := buildDev(filepath.Join(root, "dev")); err != nil {
		return err
	}
	// sysfs is a nicety: some kernels refuse it outside a new network
	// namespace.
	_ = mountFS("sysfs", filepath.Join(root, "sys"), noExec|syscall.MS_RDONLY, "")
	return nil
}

// bindMount mounts src at dst (created as a directory or an empty file),
// read-only when ro.
func bindMount(src, dst string, dir, ro bool) error {
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("exec init: %w", err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("exec init: %w", err)
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("exec init: %w", err)
		}
		f.Close()
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("exec init: mounting %s at %s: %w", src, dst, err)
	}
	if ro {
		if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("exec init: making %s read-only: %w", dst, err)
		}
	}
	return nil
}

// mountFS mounts a kernel file system of type fstype at dst.
func mountFS(fstype, dst string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("exec init: %w", err)
	}
	if err := syscall.Mount(fstype, dst, fstype, flags, data); err != nil {
		return fmt.Errorf("exec init: mounting %s at %s: %w", fstype, dst, err)
	}
	return nil
}

// devices are bound from the host into the task's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildDev makes a small /dev: a tmpfs with the usual devices, shm,
// mqueue, pts and the fd links.
func buildDev(dev string) error {
	if err := mountFS("tmpfs", dev, syscall.MS_NOSUID|syscall.MS_STRICTATIME, "mode=755"); err != nil {
		return err
	}
	for _, d := range devices {
		if err := bindMount("/dev/"+d, filepath.Join(dev, d), false, false); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("exec init: %w", err)
		}
	}
	const noExec = syscall.MS_NOSUID | syscall.MS_NOEXEC | syscall.MS_NODEV
	if err := mountFS("tmpfs", filepath.Join(dev, "shm"), noExec, "mode=1777,size=65536k"); err != nil {
		return err
	}
	_ = mountFS("mqueue", filepath.Join(dev, "mqueue"), noExec, "")
	_ = mountFS("devpts", filepath.Join(dev, "pts"), syscall.MS_NOSUID|syscall.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
	return nil
}

// enterRoot makes the task directory the root: pivot_root, detaching the
// old root, or chroot with no_pivot_root.
func enterRoot(lc *launchConfig) error {
	root := lc.TaskDir
	if lc.NoPivotRoot {
		if err := syscall.Chroot(root); err != nil {
			return fmt.Errorf("exec init: chroot: %w", err)
		}
		return syscall.Chdir("/")
	}
	if err := syscall.Chdir(root); err != nil {
		return fmt.Errorf("exec init: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// "." then drops it.
	if err := syscall.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("exec init: pivot_root: %w", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("exec init: detaching the old root: %w", err)
	}
	return syscall.Chdir("/")
}

// lookupTaskBin finds the command in the chroot as Nomad's exec does: in
// /local, then at the root, then (for a bare name) in /usr/local/bin,
// /usr/bin and /bin. When none is a regular file, the command as written
// is returned, so that execve reports the kernel's error for it.
func lookupTaskBin(cmd string) (string, error) {
	cands := []string{filepath.Join("/local", cmd), filepath.Join("/", cmd)}
	if !strings.Contains(cmd, "/") {
		for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
			cands = append(cands, filepath.Join(d, cmd))
		}
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	return filepath.Join("/", cmd), nil
}

// Linux prctl and capability constants.
const (
	prSetKeepCaps     = 8
	prCapBSetDrop     = 24
	prCapAmbient      = 47
	prCapAmbientRaise = 2
	capVersion3       = 0x20080522
)

// dropPrivileges becomes the task's user on this thread. A non-root task
// keeps exactly its capabilities (bounding, permitted, inheritable and
// ambient, so that they survive execve), as Nomad; root keeps all.
func dropPrivileges(lc *launchConfig) error {
	if lc.UID == 0 && lc.GID == 0 {
		return nil
	}
	var caps uint64
	for _, c := range lc.Caps {
		if n, ok := driverspec.CapabilityNumber(c); ok {
			caps |= 1 << uint(n)
		}
	}
	last := lastCap()
	for c := 0; c <= last; c++ {
		if caps&(1<<uint(c)) == 0 {
			if err := prctl(prCapBSetDrop, uintptr(c), 0); err != nil {
				return fmt.Errorf("exec init: dropping capability %d: %w", c, err)
			}
		}
	}
	if err := prctl(prSetKeepCaps, 1, 0); err != nil {
		return fmt.Errorf("exec init: keeping capabilities: %w", err)
	}
	gids := make([]uint32, len(lc.Groups))
	for i, g := range lc.Groups {
		gids[i] = uint32(g)
	}
	var gp unsafe.Pointer
	if len(gids) > 0 {
		gp = unsafe.Pointer(&gids[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(gids)), uintptr(gp), 0); e != 0 {
		return fmt.Errorf("exec init: setgroups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(lc.GID), uintptr(lc.GID), uintptr(lc.GID)); e != 0 {
		return fmt.Errorf("exec init: setresgid %d: %w", lc.GID, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(lc.UID), uintptr(lc.UID), uintptr(lc.UID)); e != 0 {
		return fmt.Errorf("exec init: setresuid %d: %w", lc.UID, e)
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: capVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	for i := range data {
		v := uint32(caps >> (32 * uint(i)))
		data[i].effective, data[i].permitted, data[i].inheritable = v, v, v
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("exec init: capset: %w", e)
	}
	for c := 0; c <= last; c++ {
		if caps&(1<<uint(c)) != 0 {
			if err := prctl(prCapAmbient, prCapAmbientRaise, uintptr(c)); err != nil {
				return fmt.Errorf("exec init: raising ambient capability %d: %w", c, err)
			}
		}
	}
	return nil
}

func prctl(op, a, b uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, op, a, b, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// lastCap is the highest capability the kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 40
}

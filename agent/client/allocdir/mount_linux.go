package allocdir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drover-project/drover/internal/mountinfo"
)

// MountVolume makes the host directory source appear at rel, a cleaned
// path relative to the task directory taskDir (structs.MountDestination),
// for a raw_exec task, which runs on the host without a chroot:
//
//   - a bind mount of source at <taskDir>/<rel>, remounted read-only when
//     readOnly. The target is created and opened inside the task
//     directory (os.Root), and the mount is made on the opened directory
//     (/proc/self/fd/N), so a symlink the task left in its directory can
//     never point the mount elsewhere on the host. A target that already
//     is a mount point (a client restarted while the task ran) is left
//     as it is.
//   - when the client cannot bind mount (it does not run as root), a
//     symlink at <taskDir>/<rel> to source instead; a read-only volume is
//     then refused, since a symlink cannot stop writes.
//
// It returns "bind" or "symlink".
func MountVolume(taskDir, rel, source string, readOnly bool) (string, error) {
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	target := filepath.Join(taskDir, rel)
	if mounted, err := IsMountPoint(target); err == nil && mounted {
		return "bind", nil
	}
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return "", fmt.Errorf("creating the mount point: %w", err)
	}
	f, err := root.Open(rel)
	if err != nil {
		return "", fmt.Errorf("opening the mount point: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.IsDir() {
		f.Close()
		return "", fmt.Errorf("the mount point %s is not a directory", rel)
	}
	err = unix.Mount(source, fdPath(f), "", unix.MS_BIND, "")
	f.Close()
	if err != nil {
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
			return "", fmt.Errorf("bind mounting %s: %w", source, err)
		}
		return symlinkVolume(root, rel, source, readOnly, err)
	}
	if readOnly {
		// Remount the new mount (the directory opened again is its root)
		// read-only.
		m, err := root.Open(rel)
		if err == nil {
			err = unix.Mount("", fdPath(m), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
			m.Close()
		}
		if err != nil {
			_ = unix.Unmount(target, unix.MNT_DETACH)
			return "", fmt.Errorf("remounting %s read-only: %w", rel, err)
		}
	}
	return "bind", nil
}

// symlinkVolume replaces the empty mount point rel with a symlink to
// source, when bind mounting is not permitted.
func symlinkVolume(root *os.Root, rel, source string, readOnly bool, mountErr error) (string, error) {
	if readOnly {
		return "", fmt.Errorf("the volume is read-only and this client cannot bind mount it (%v); "+
			"a symlink would let the task write to it", mountErr)
	}
	if err := root.Remove(rel); err != nil {
		return "", fmt.Errorf("bind mount not permitted (%v), and the mount point cannot be replaced by a symlink: %w", mountErr, err)
	}
	if err := root.Symlink(source, rel); err != nil {
		return "", fmt.Errorf("bind mount not permitted (%v), and symlinking failed: %w", mountErr, err)
	}
	return "symlink", nil
}

func fdPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// UnmountUnder unmounts every mount point at or below dir, deepest first
// (lazily: a process still using one keeps it until it lets go, but the
// tree is detached from dir at once). It returns the first failure.
func UnmountUnder(dir string) error {
	points, err := mountPointsUnder(dir)
	if err != nil {
		return err
	}
	var first error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) && first == nil {
			first = fmt.Errorf("unmounting %s: %w", p, err)
		}
	}
	return first
}

// IsMountPoint reports whether path is a mount point.
func IsMountPoint(path string) (bool, error) {
	points, err := mountPointsUnder(path)
	if err != nil {
		return false, err
	}
	return slices.Contains(points, filepath.Clean(path)), nil
}

// mountPointsUnder lists the mount points at or below dir from
// /proc/self/mountinfo, deepest first.
func mountPointsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := mountinfo.Unescape(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out, nil
}

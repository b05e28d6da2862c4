package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Log files live in a directory the task can write to: a task may replace
// a log file, or the log directory itself, with a symlink to a file of the
// host (/etc/shadow), and the client, usually root, would then serve or
// append to that file (Nomad's CVE-2022-24683 class). Every file of a
// series is therefore opened through an os.Root of its directory, itself
// opened through a Root of the parent: a symlink is followed only while it
// stays inside, and a log file or the log directory must not be a
// symlink at all (checked first, with a clear error; the Roots close the
// race between that check and the open).

// ErrNotRegular is a log file that is not a regular file, or a log
// directory that is a symlink: a task replaced it.
var ErrNotRegular = errors.New("not a regular file or directory inside the allocation (replaced by the task?)")

// errNotRegular is the package's short name for it.
var errNotRegular = ErrNotRegular

// openDir opens dir as a Root, refusing a dir that is a symlink or passes
// through one leading out of its parent.
func openDir(dir string) (*os.Root, error) {
	if st, err := os.Lstat(dir); err == nil && !st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: errNotRegular}
	}
	parent, err := os.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	root, err := parent.OpenRoot(filepath.Base(dir))
	if err != nil {
		return nil, fmt.Errorf("log directory %s: %w", dir, err)
	}
	return root, nil
}

// openLog opens the log file name in root with flag, refusing anything
// but a regular file inside root.
func openLog(root *os.Root, name string, flag int) (*os.File, error) {
	st, err := root.Lstat(name)
	switch {
	case err == nil && !st.Mode().IsRegular():
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(root.Name(), name), Err: errNotRegular}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	f, err := root.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(root.Name(), name), Err: errNotRegular}
	}
	return f, nil
}

// indexesIn is Indexes over an open directory.
func indexesIn(root *os.Root, base string) ([]int, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	return indexesOf(entries, base), nil
}

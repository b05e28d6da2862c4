package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// inspect checks a staged artifact (a file or a directory): every symlink
// in it must lead to a place inside it, and nothing may be a device, a
// FIFO or a socket. go-getter writes no symlinks, but a git checkout can.
func inspect(staged string) error {
	return filepath.WalkDir(staged, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir(), t.IsRegular():
			return nil
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			if !within(filepath.Clean(target), staged) {
				rel, _ := filepath.Rel(staged, p)
				return fmt.Errorf("the artifact's symlink %q leads out of it (to %q)", rel, target)
			}
			return nil
		default:
			rel, _ := filepath.Rel(staged, p)
			return fmt.Errorf("the artifact holds %q, which is not a file, directory or symlink", rel)
		}
	})
}

// place moves a staged artifact to dest, both inside allocDir, through an
// os.Root on allocDir: a single file replaces what is at dest; a
// directory's entries are merged into dest (a directory meets a directory
// and merges, anything else is replaced), as Nomad does.
func place(allocDir, staged, dest string, file bool) error {
	root, err := os.OpenRoot(allocDir)
	if err != nil {
		return err
	}
	defer root.Close()
	src, err1 := filepath.Rel(allocDir, staged)
	dst, err2 := filepath.Rel(allocDir, dest)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if file {
		if err := root.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return placeErr(dest, err)
		}
		if err := root.Rename(src, dst); err != nil {
			return placeErr(dest, err)
		}
		return nil
	}
	if err := root.MkdirAll(dst, 0o755); err != nil {
		return placeErr(dest, err)
	}
	return merge(root, src, dst, dest)
}

// merge moves the entries of directory src into directory dst (both
// relative to root); dest names dst in errors.
func merge(root *os.Root, src, dst, dest string) error {
	dir, err := root.Open(src)
	if err != nil {
		return err
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		fi, err := root.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return placeErr(dest, err)
		case e.IsDir() && fi.IsDir():
			if err := merge(root, s, d, dest); err != nil {
				return err
			}
			continue
		default:
			if err := root.RemoveAll(d); err != nil {
				return placeErr(dest, err)
			}
		}
		if err := root.Rename(s, d); err != nil {
			return placeErr(dest, err)
		}
	}
	return nil
}

// placeErr reports a failed move (os.Root's error says "path escapes
// from parent" for a symlink leading out of the allocation directory).
func placeErr(dest string, err error) error {
	return fmt.Errorf("writing the artifact to %s: %w", dest, err)
}

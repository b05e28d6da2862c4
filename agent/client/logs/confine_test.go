package logs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const secret = "root:$6$secret:19000:0:99999:7:::\n"

// outside writes a file standing for /etc/shadow outside the log
// directory and returns its path.
func outside(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, dir string) (string, error) {
	t.Helper()
	r, err := NewReader(dir, "t.stdout", 0, false, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

// TestReaderRefusesSymlinks: a log file, or the log directory, replaced
// by a symlink to a file outside is never read.
func TestReaderRefusesSymlinks(t *testing.T) {
	t.Run("log file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(outside(t), filepath.Join(dir, "t.stdout.0")); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(t, dir)
		if got == secret || !errors.Is(err, ErrNotRegular) {
			t.Fatalf("read %q, %v", got, err)
		}
	})
	t.Run("later file", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "t.stdout.0"), []byte("mine\n"), 0o644)
		if err := os.Symlink(outside(t), filepath.Join(dir, "t.stdout.1")); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(t, dir)
		if got != "mine\n" || !errors.Is(err, ErrNotRegular) {
			t.Fatalf("read %q, %v; want the first file, then an error", got, err)
		}
	})
	t.Run("log directory", func(t *testing.T) {
		alloc := t.TempDir()
		elsewhere := filepath.Dir(outside(t))
		os.Symlink(filepath.Join(elsewhere, "shadow"), filepath.Join(elsewhere, "t.stdout.0"))
		os.WriteFile(filepath.Join(elsewhere, "t.stdout.1"), []byte(secret), 0o600)
		logs := filepath.Join(alloc, "logs")
		if err := os.Symlink(elsewhere, logs); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(t, logs)
		if got == secret || !errors.Is(err, ErrNotRegular) {
			t.Fatalf("read %q, %v", got, err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, "t.stdout.0"), 0o644); err != nil {
			t.Skip(err)
		}
		done := make(chan error, 1)
		go func() { _, err := readAll(t, dir); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Fatalf("fifo: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("reading a FIFO planted as a log file blocked")
		}
	})
}

// TestRotatorRefusesSymlinks: the client never appends task output to a
// file outside through a symlink planted as the current or next log file.
func TestRotatorRefusesSymlinks(t *testing.T) {
	target := outside(t)
	dir := t.TempDir()
	if err := os.Symlink(target, filepath.Join(dir, "t.stdout.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRotator(dir, "t.stdout", 3, 10); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("NewRotator over a symlink: %v", err)
	}

	dir = t.TempDir()
	w, err := NewRotator(dir, "t.stdout", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Symlink(target, filepath.Join(dir, "t.stdout.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("0123456789 and more")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("rotating onto a symlink: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != secret {
		t.Fatalf("the file outside was changed: %q", b)
	}
}

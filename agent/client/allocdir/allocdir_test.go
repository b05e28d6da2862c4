package allocdir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLayout(t *testing.T) {
	root := t.TempDir()
	d, err := New(root, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Build(); err != nil {
		t.Fatal(err)
	}
	td, err := d.TaskDir("web")
	if err != nil {
		t.Fatal(err)
	}
	if err := td.Build(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a1/alloc/logs", "a1/alloc/data", "a1/alloc/tmp", "a1/web/local", "a1/web/secrets", "a1/web/tmp"} {
		if st, err := os.Stat(filepath.Join(root, p)); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", p, err)
		}
	}
	if got := d.LogFIFO("web", Stdout); got != filepath.Join(root, "a1", "alloc", "logs", ".web.stdout.fifo") {
		t.Errorf("fifo %s", got)
	}
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a1")); !os.IsNotExist(err) {
		t.Fatalf("not destroyed: %v", err)
	}
}

func TestRejectsEscapes(t *testing.T) {
	for _, id := range []string{"..", "../x", "a/b", ""} {
		if _, err := New(t.TempDir(), id); err == nil {
			t.Errorf("alloc ID %q accepted", id)
		}
	}
	d, _ := New(t.TempDir(), "a1")
	for _, task := range []string{"..", "../x", "a/b", "alloc", ""} {
		if _, err := d.TaskDir(task); err == nil {
			t.Errorf("task %q accepted", task)
		}
	}
}

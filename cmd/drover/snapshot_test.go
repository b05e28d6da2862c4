package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotSaveRestore saves the state of a dev agent, changes it,
// refuses a damaged file, and restores the saved one.
func TestSnapshotSaveRestore(t *testing.T) {
	addr := startCLIAgent(t)
	if code, out, errOut := cli(addr, "job", "run", "-detach", "../../examples/batch.nomad.hcl"); code != 0 {
		t.Fatalf("job run: %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "state.snap")
	code, out, errOut := cli(addr, "operator", "snapshot", "save", file)
	if code != 0 {
		t.Fatalf("snapshot save: %d\n%s%s", code, out, errOut)
	}
	// It reports the bytes it wrote: the file's size.
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("State file written to %s: %d bytes (state at index ", file, st.Size()); !strings.Contains(out, want) {
		t.Fatalf("snapshot save printed %q; want %q", out, want)
	}
	if code, out, errOut := cli(addr, "job", "stop", "-purge", "-detach", "hello"); code != 0 {
		t.Fatalf("job stop -purge: %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := cli(addr, "job", "status", "hello"); code == 0 {
		t.Fatal("purged job still listed")
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.snap")
	data[len(data)-10] ^= 0xff
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli(addr, "operator", "snapshot", "restore", bad); code != 1 || !strings.Contains(errOut, "SHA-256 mismatch") {
		t.Fatalf("damaged restore: %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = cli(addr, "operator", "snapshot", "restore", file)
	if code != 0 || !strings.Contains(out, "Snapshot restored") {
		t.Fatalf("snapshot restore: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli(addr, "job", "status", "hello"); code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("restored job missing: %d\n%s%s", code, out, errOut)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestVarCommands drives drover var put|get|list|purge and operator root
// keyring list|rotate against a dev agent, with Nomad's flags and output.
func TestVarCommands(t *testing.T) {
	addr := runDevAgent(t, "vars")
	waitFor(t, "the keyring", 30*time.Second, func() bool {
		code, out, _ := cli(addr, "operator", "root", "keyring", "list")
		return code == 0 && strings.Contains(out, "active")
	})

	file := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(file, []byte("-----BEGIN-----"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(addr, "var", "put", "-out", "none", "nomad/jobs/web", "user=admin", "cert=@"+file)
	if code != 0 || !strings.Contains(out, `Created variable "nomad/jobs/web" with modify index`) {
		t.Fatalf("put: %d %q %q", code, out, errOut)
	}
	// JSON output (the default when stdout is not a terminal), in Nomad's
	// field order.
	code, out, errOut = cli(addr, "var", "get", "nomad/jobs/web")
	var got struct {
		Namespace, Path string
		ModifyIndex     uint64
		Items           map[string]string
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Items["cert"] != "-----BEGIN-----" || got.Namespace != "default" {
		t.Fatalf("get: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "\"Namespace\": \"default\",\n  \"Path\": \"nomad/jobs/web\",\n  \"CreateIndex\"") {
		t.Fatalf("get json shape: %s", out)
	}
	if code, out, _ := cli(addr, "var", "get", "-item", "user", "nomad/jobs/web"); code != 0 || out != "admin" {
		t.Fatalf("get -item: %d %q", code, out)
	}
	code, out, _ = cli(addr, "var", "get", "-out", "table", "nomad/jobs/web")
	if code != 0 || !strings.Contains(out, "Check Index") || !strings.Contains(out, "user = admin") {
		t.Fatalf("get table: %d %q", code, out)
	}
	if code, out, _ := cli(addr, "var", "get", "-out", "hcl", "nomad/jobs/web"); code != 0 || !strings.Contains(out, `path         = "nomad/jobs/web"`) {
		t.Fatalf("get hcl: %d %q", code, out)
	}

	// A second put without -force or -check-index is a check-and-set
	// conflict, as in Nomad; with the right index or -force it writes.
	code, _, errOut = cli(addr, "var", "put", "nomad/jobs/web", "user=root")
	if code != 1 || !strings.Contains(errOut, "Check-and-Set conflict") || !strings.Contains(errOut, "-check-index=") {
		t.Fatalf("put over an existing variable: %d %q", code, errOut)
	}
	code, _, errOut = cli(addr, "var", "put", "-check-index", "1", "nomad/jobs/web", "user=root")
	if code != 1 || !strings.Contains(errOut, "Your provided check-index (1)") {
		t.Fatalf("stale check-index: %d %q", code, errOut)
	}
	code, out, errOut = cli(addr, "var", "put", "-check-index", strconv.FormatUint(got.ModifyIndex, 10), "nomad/jobs/web", "user=root")
	if code != 0 || !strings.Contains(out, `"user": "root"`) {
		t.Fatalf("put -check-index: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(addr, "var", "put", "-force", "-out", "none", "nomad/jobs/web", "user=forced"); code != 0 {
		t.Fatalf("put -force: %d %q", code, errOut)
	}
	if code, _, errOut := cli(addr, "var", "put", "-out", "none", "app/db", "password=x"); code != 0 {
		t.Fatalf("put app/db: %d %q", code, errOut)
	}

	code, out, _ = cli(addr, "var", "list")
	if code != 0 || !strings.Contains(out, "Namespace") || !strings.Contains(out, "Last Updated") ||
		!strings.Contains(out, "app/db") || !strings.Contains(out, "nomad/jobs/web") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, out, _ := cli(addr, "var", "list", "-q", "nomad/"); code != 0 || out != "nomad/jobs/web\n" {
		t.Fatalf("list -q prefix: %d %q", code, out)
	}
	if code, out, _ := cli(addr, "var", "list", "none/"); code != 0 || out != "No matching variables found\n" {
		t.Fatalf("list empty: %d %q", code, out)
	}
	if code, _, errOut := cli(addr, "var", "list", "-filter", "x"); code != 1 || !strings.Contains(errOut, "Drover does not support filter expressions") {
		t.Fatalf("list -filter: %d %q", code, errOut)
	}

	// Rotation, plain and full; the variables still read.
	if code, out, errOut := cli(addr, "operator", "root", "keyring", "rotate", "-full"); code != 0 || !strings.Contains(out, "active") {
		t.Fatalf("rotate: %d %q %q", code, out, errOut)
	}
	code, out, _ = cli(addr, "operator", "root", "keyring", "list")
	if code != 0 || strings.Count(out, "  active") != 1 || strings.Count(out, "  inactive") != 1 {
		t.Fatalf("keyring list: %d %q", code, out)
	}
	if code, out, _ := cli(addr, "var", "get", "-item", "user", "nomad/jobs/web"); code != 0 || out != "forced" {
		t.Fatalf("get after rotation: %d %q", code, out)
	}

	if code, _, errOut := cli(addr, "var", "purge", "-check-index", "1", "app/db"); code != 1 || !strings.Contains(errOut, "Check-and-Set conflict") {
		t.Fatalf("purge stale: %d %q", code, errOut)
	}
	if code, out, _ := cli(addr, "var", "purge", "app/db"); code != 0 || out != "Successfully purged variable \"app/db\"!\n" {
		t.Fatalf("purge: %d %q", code, out)
	}
	if code, _, errOut := cli(addr, "var", "get", "app/db"); code != 1 || !strings.Contains(errOut, "Variable not found") {
		t.Fatalf("get purged: %d %q", code, errOut)
	}
	if code, _, errOut := cli(addr, "var", "put", "nomad/secret", "a=b"); code != 1 || !strings.Contains(errOut, "only paths at") {
		t.Fatalf("reserved path: %d %q", code, errOut)
	}
}

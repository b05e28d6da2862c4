package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIACL runs the acl verbs against a dev agent (server and client)
// with ACLs on: the client registers with its node secret, bootstrap
// works once, and tokens limit what the CLI may do.
func TestCLIACL(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "acl.hcl")
	if err := os.WriteFile(cfgFile, []byte("acl {\n  enabled = true\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := runDevAgent(t, "acl", "-config", cfgFile)

	var out, stderr string
	var code int
	waitFor(t, "a leader", 20*time.Second, func() bool {
		code, out, stderr = cli(addr, "acl", "bootstrap")
		return code == 0
	})
	secret := regexp.MustCompile(`Secret ID\s+= (\S+)`).FindStringSubmatch(out)
	if secret == nil || !strings.Contains(out, "Type         = management") {
		t.Fatalf("bootstrap output:\n%s", out)
	}
	root := secret[1]
	if code, _, stderr = cli(addr, "acl", "bootstrap"); code != 1 || !strings.Contains(stderr, "ACL bootstrap already done") {
		t.Fatalf("second bootstrap: %d %s", code, stderr)
	}
	if code, _, stderr = cli(addr, "job", "status"); code != 1 || !strings.Contains(stderr, "Permission denied") {
		t.Fatalf("anonymous job status: %d %s", code, stderr)
	}
	waitFor(t, "the client node registered under ACLs", 30*time.Second, func() bool {
		code, out, _ := cli(addr, "node", "status", "-token", root)
		return code == 0 && strings.Contains(out, "ready")
	})

	policy := filepath.Join(dir, "read.hcl")
	if err := os.WriteFile(policy, []byte(`namespace "default" { policy = "read" }`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr = cli(addr, "acl", "policy", "apply", "-token", root, "-description", "read jobs", "readonly", policy); code != 0 ||
		!strings.Contains(out, `Successfully wrote "readonly" ACL policy!`) {
		t.Fatalf("policy apply: %d %s %s", code, out, stderr)
	}
	if code, out, _ = cli(addr, "acl", "policy", "list", "-token", root); code != 0 || !strings.Contains(out, "readonly  read jobs") {
		t.Fatalf("policy list: %d\n%s", code, out)
	}
	code, out, stderr = cli(addr, "acl", "token", "create", "-token", root, "-name", "ci", "-policy", "readonly")
	if code != 0 {
		t.Fatalf("token create: %s", stderr)
	}
	reader := regexp.MustCompile(`Secret ID\s+= (\S+)`).FindStringSubmatch(out)[1]
	accessor := regexp.MustCompile(`Accessor ID\s+= (\S+)`).FindStringSubmatch(out)[1]
	if code, out, _ = cli(addr, "acl", "token", "self", "-token", reader); code != 0 || !strings.Contains(out, "Policies     = [readonly]") {
		t.Fatalf("token self: %d\n%s", code, out)
	}
	if code, out, _ = cli(addr, "acl", "token", "list", "-token", root); code != 0 || !strings.Contains(out, accessor) {
		t.Fatalf("token list: %d\n%s", code, out)
	}
	if code, _, stderr = cli(addr, "acl", "token", "list", "-token", reader); code != 1 || !strings.Contains(stderr, "403") {
		t.Fatalf("token list with a client token: %d %s", code, stderr)
	}
	if code, out, _ = cli(addr, "job", "status", "-token", reader); code != 0 {
		t.Fatalf("job status with the read token: %d %s", code, out)
	}
	if code, out, _ = cli(addr, "acl", "token", "info", "-token", root, accessor); code != 0 || !strings.Contains(out, "<hidden: shown only at creation>") {
		t.Fatalf("token info: %d\n%s", code, out)
	}
	if code, out, stderr = cli(addr, "acl", "token", "update", "-token", root, "-name", "ci2", accessor); code != 0 || !strings.Contains(out, "Name         = ci2") {
		t.Fatalf("token update: %d\n%s%s", code, out, stderr)
	}
	if code, out, _ = cli(addr, "acl", "token", "delete", "-token", root, accessor); code != 0 {
		t.Fatalf("token delete: %s", out)
	}
	if code, _, _ = cli(addr, "acl", "policy", "delete", "-token", root, "readonly"); code != 0 {
		t.Fatal("policy delete failed")
	}

	// The client runs work under ACLs (it fetches its allocations and
	// reports their status with its node secret), and the logs need a
	// token too.
	job := filepath.Join(dir, "batch.nomad.hcl")
	if err := os.WriteFile(job, []byte(`job "hello" {
  type        = "batch"
  datacenters = ["*"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello under acls"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr = cli(addr, "job", "run", "-token", root, job); code != 0 {
		t.Fatalf("job run: %d\n%s%s", code, out, stderr)
	}
	var status string
	waitFor(t, "the batch job to complete", 30*time.Second, func() bool {
		_, status, _ = cli(addr, "job", "status", "-token", root, "hello")
		return strings.Contains(status, "complete")
	})
	alloc := regexp.MustCompile(`(?m)^([0-9a-f]{8})\s`).FindStringSubmatch(status)
	if alloc == nil {
		t.Fatalf("no allocation in:\n%s", status)
	}
	if code, out, stderr = cli(addr, "alloc", "logs", "-token", root, alloc[1]); code != 0 || !strings.Contains(out, "hello under acls") {
		t.Fatalf("alloc logs: %d %q %s", code, out, stderr)
	}
	if code, _, stderr = cli(addr, "alloc", "logs", alloc[1]); code == 0 || !strings.Contains(stderr, "Permission denied") {
		t.Fatalf("anonymous alloc logs: %d %s", code, stderr)
	}
}

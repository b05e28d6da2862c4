package agent

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// waitKeyringHTTP waits until the cluster has an active root key.
func waitKeyringHTTP(t *testing.T, c *nomad.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		keys, _, err := c.Keyring().List(nil)
		if err == nil && len(keys) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no root key: %v %v", keys, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNomadClientVariables drives the variables API with Nomad's own Go
// client (what nomad var and consul-template send) against a dev agent.
func TestNomadClientVariables(t *testing.T) {
	a := startDevAgent(t)
	c := nomadClient(t, a.HTTPURL(), "")
	waitKeyringHTTP(t, c)
	vars := c.Variables()

	v, _, err := vars.Create(&nomad.Variable{Path: "/nomad/jobs/web/", Items: nomad.VariableItems{"user": "admin", "pass": "s3cret"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Path != "nomad/jobs/web" || v.Namespace != "default" || v.Items["pass"] != "s3cret" || v.ModifyIndex == 0 || v.CreateTime == 0 {
		t.Fatalf("create answered %+v", v)
	}
	got, qm, err := vars.Read("nomad/jobs/web", nil)
	if err != nil || got.Items["user"] != "admin" || qm.LastIndex != v.ModifyIndex {
		t.Fatalf("read: %+v %+v %v", got, qm, err)
	}
	if _, _, err := vars.Read("missing", nil); !errors.Is(err, nomad.ErrVariablePathNotFound) {
		t.Fatalf("read missing: %v", err)
	}

	// CheckedCreate of an existing path and CheckedUpdate with a stale
	// index are CAS conflicts carrying the current variable.
	_, _, err = vars.CheckedCreate(&nomad.Variable{Path: "nomad/jobs/web", Items: nomad.VariableItems{"a": "b"}}, nil)
	var conflict nomad.ErrCASConflict
	if !errors.As(err, &conflict) || conflict.Conflict.ModifyIndex != v.ModifyIndex || conflict.Conflict.Items["user"] != "admin" {
		t.Fatalf("checked create: %v", err)
	}
	stale := got.Copy()
	stale.ModifyIndex = 1
	stale.Items["user"] = "root"
	if _, _, err := vars.CheckedUpdate(stale, nil); !errors.As(err, &conflict) {
		t.Fatalf("stale checked update: %v", err)
	}
	fresh := got.Copy()
	fresh.Items["user"] = "root"
	upd, _, err := vars.CheckedUpdate(fresh, nil)
	if err != nil || upd.Items["user"] != "root" || upd.CreateIndex != v.CreateIndex || upd.ModifyIndex <= v.ModifyIndex {
		t.Fatalf("checked update: %+v %v", upd, err)
	}

	// List and prefix list: metadata only.
	if _, _, err := vars.Create(&nomad.Variable{Path: "app/config", Items: nomad.VariableItems{"k": "v"}}, nil); err != nil {
		t.Fatal(err)
	}
	all, _, err := vars.List(nil)
	if err != nil || len(all) != 2 || all[0].Path != "app/config" || all[1].Path != "nomad/jobs/web" {
		t.Fatalf("list: %+v %v", all, err)
	}
	some, _, err := vars.PrefixList("nomad/", nil)
	if err != nil || len(some) != 1 || some[0].ModifyIndex != upd.ModifyIndex {
		t.Fatalf("prefix list: %+v %v", some, err)
	}

	// A blocking read wakes on a write.
	done := make(chan *nomad.Variable, 1)
	go func() {
		v, _, _ := vars.Read("nomad/jobs/web", &nomad.QueryOptions{WaitIndex: upd.ModifyIndex, WaitTime: 10 * time.Second})
		done <- v
	}()
	time.Sleep(100 * time.Millisecond)
	if _, _, err := vars.Update(&nomad.Variable{Path: "nomad/jobs/web", Items: nomad.VariableItems{"user": "later"}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-done:
		if v == nil || v.Items["user"] != "later" {
			t.Fatalf("blocking read: %+v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking read did not wake")
	}

	// Bad input: 400 naming the problem, nothing written.
	if _, _, err := vars.Create(&nomad.Variable{Path: "nomad/secret", Items: nomad.VariableItems{"a": "b"}}, nil); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("reserved path: %v", err)
	}
	if _, _, err := vars.Create(&nomad.Variable{Path: "x", Items: nomad.VariableItems{}}, nil); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("no items: %v", err)
	}

	// Deletes: a stale checked delete conflicts; delete removes.
	cur, _, _ := vars.Read("nomad/jobs/web", nil)
	if _, err := vars.CheckedDelete("nomad/jobs/web", 1, nil); !errors.As(err, &conflict) {
		t.Fatalf("stale checked delete: %v", err)
	}
	if _, err := vars.CheckedDelete("nomad/jobs/web", cur.ModifyIndex, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := vars.Delete("app/config", nil); err != nil {
		t.Fatal(err)
	}
	if left, _, err := vars.List(nil); err != nil || len(left) != 0 {
		t.Fatalf("after deletes: %+v %v", left, err)
	}

	// The keyring: rotate (full) and list.
	key, _, err := c.Keyring().Rotate(&nomad.KeyringRotateOptions{Full: true}, nil)
	if err != nil || key.State != nomad.RootKeyStateActive || key.Algorithm != nomad.EncryptionAlgorithmAES256GCM {
		t.Fatalf("rotate: %+v %v", key, err)
	}
	keys, _, err := c.Keyring().List(nil)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys: %+v %v", keys, err)
	}
}

// TestVariablesACL checks the variables block of ACL policies through
// Nomad's client on a three-server cluster with ACLs on.
func TestVariablesACL(t *testing.T) {
	leader, urls := aclCluster(t)
	boot, _, err := nomadClient(t, urls[leader], "").ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	mgmt := nomadClient(t, urls[leader], boot.SecretID)
	waitKeyringHTTP(t, mgmt)
	if _, err := mgmt.ACLPolicies().Upsert(&nomad.ACLPolicy{Name: "app", Rules: `namespace "default" {
  variables {
    path "app/*" { capabilities = ["read", "write"] }
    path "app/locked" { capabilities = ["deny"] }
    path "shared/*" { capabilities = ["list"] }
    path "drop/*" { capabilities = ["write"] }
  }
}`}, nil); err != nil {
		t.Fatal(err)
	}
	tok, _, err := mgmt.ACLTokens().Create(&nomad.ACLToken{Type: "client", Policies: []string{"app"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"app/locked", "shared/x", "other/y", "drop/box"} {
		if _, _, err := mgmt.Variables().Create(&nomad.Variable{Path: p, Items: nomad.VariableItems{"k": "v"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Any server answers: a follower forwards, the leader checks again.
	user := nomadClient(t, urls[(leader+1)%len(urls)], tok.SecretID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := user.Variables().Create(&nomad.Variable{Path: "app/db", Items: nomad.VariableItems{"pw": "x"}}, nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write app/db: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v, _, err := user.Variables().Read("app/db", nil); err != nil || v.Items["pw"] != "x" {
		t.Fatalf("read app/db: %+v %v", v, err)
	}
	for _, p := range []string{"app/locked", "shared/x", "other/y"} {
		if _, _, err := user.Variables().Read(p, nil); statusOf(err) != http.StatusForbidden {
			t.Errorf("read %s: %v, want 403", p, err)
		}
	}
	if _, _, err := user.Variables().Create(&nomad.Variable{Path: "other/z", Items: nomad.VariableItems{"k": "v"}}, nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("write other/z: %v, want 403", err)
	}
	if _, err := user.Variables().Delete("app/db", nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("delete without destroy: %v, want 403", err)
	}
	// A conflict on a path the token may write but not read carries the
	// variable's metadata without its items (Nomad's conflict-redacted).
	var conflict nomad.ErrCASConflict
	_, _, err = user.Variables().CheckedCreate(&nomad.Variable{Path: "drop/box", Items: nomad.VariableItems{"k": "new"}}, nil)
	if !errors.As(err, &conflict) || conflict.Conflict.ModifyIndex == 0 || len(conflict.Conflict.Items) != 0 {
		t.Errorf("redacted conflict: %v %+v", err, conflict.Conflict)
	}
	// The list shows only what the token may list.
	list, _, err := user.Variables().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range list {
		paths = append(paths, m.Path)
	}
	if len(paths) != 2 || paths[0] != "app/db" || paths[1] != "shared/x" {
		t.Fatalf("list shows %v", paths)
	}
	// The keyring is management's.
	if _, _, err := user.Keyring().List(nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("keyring list: %v, want 403", err)
	}
	if _, _, err := user.Keyring().Rotate(nil, nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("keyring rotate: %v, want 403", err)
	}
}

// TestWorkloadIdentityReadsJobVariables: on a dev agent with ACLs on, a
// task with identity { env = true, file = true } gets its token in
// NOMAD_TOKEN and secrets/nomad_token (the same token the client's
// WorkloadToken gives templates), and that token reads its job's
// variables through the HTTP API with Nomad's client, and nothing else.
func TestWorkloadIdentityReadsJobVariables(t *testing.T) {
	cfg := DevConfig()
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.ACL.Enabled = true
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	srv := a.Server()
	var boot structs.ACLTokenUpsertResponse
	pollUntil(t, "bootstrap", 15*time.Second, func() bool {
		return srv.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot) == nil
	})
	root := boot.Tokens[0].SecretID
	mgmt := nomadClient(t, a.HTTPURL(), root)
	waitKeyringHTTP(t, mgmt)
	for _, p := range []string{"nomad/jobs/idjob", "nomad/jobs/idjob/g/t", "nomad/jobs/otherjob"} {
		if _, _, err := mgmt.Variables().Create(&nomad.Variable{Path: p, Items: nomad.VariableItems{"at": p}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	job := rawExecJob("idjob", structs.JobTypeService, `printf '%s' "$NOMAD_TOKEN" > "$NOMAD_TASK_DIR/env_token"; sleep 60`)
	job.TaskGroups[0].Tasks[0].Identity = &structs.WorkloadIdentity{Env: true, File: true}
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{AuthToken: root}}, &reg); err != nil {
		t.Fatal(err)
	}
	var alloc *structs.Allocation
	taskDir := func() string { return filepath.Join(a.DataDir(), "alloc", alloc.ID, "t") }
	pollUntil(t, "task wrote its token", 20*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "idjob")
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		buf, err := os.ReadFile(filepath.Join(taskDir(), "local", "env_token"))
		return err == nil && len(buf) > 0
	})
	envTok, _ := os.ReadFile(filepath.Join(taskDir(), "local", "env_token"))
	fileTok, err := os.ReadFile(filepath.Join(taskDir(), "secrets", "nomad_token"))
	if err != nil || string(fileTok) != string(envTok) {
		t.Fatalf("file token %q (%v), env token %q", fileTok, err, envTok)
	}
	tok, err := a.Client().WorkloadToken(alloc.ID, "t")
	if err != nil || tok != string(envTok) {
		t.Fatalf("WorkloadToken: %q %v", tok, err)
	}
	if _, err := a.Client().WorkloadToken("not-an-alloc", "t"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("WorkloadToken of an unknown allocation: %v", err)
	}

	task := nomadClient(t, a.HTTPURL(), tok)
	for _, p := range []string{"nomad/jobs/idjob", "nomad/jobs/idjob/g/t"} {
		v, _, err := task.Variables().Read(p, nil)
		if err != nil || v.Items["at"] != p {
			t.Errorf("identity reads %s: %+v %v", p, v, err)
		}
	}
	if _, _, err := task.Variables().Read("nomad/jobs/otherjob", nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("identity reads another job's variable: %v", err)
	}
	list, _, err := task.Variables().PrefixList("nomad/jobs/", nil)
	if err != nil || len(list) != 2 {
		t.Errorf("identity lists %+v %v", list, err)
	}
	if _, _, err := task.Jobs().List(nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("identity lists jobs: %v", err)
	}
}

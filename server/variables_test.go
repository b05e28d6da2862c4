package server_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/rpctest"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

func varApply(t *testing.T, s *server.Server, op structs.VarOp, path string, modify uint64, items structs.VariableItems) *structs.VariablesApplyResponse {
	t.Helper()
	var resp structs.VariablesApplyResponse
	req := &structs.VariablesApplyRequest{Op: op, Var: &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Path: path, ModifyIndex: modify}, Items: items},
		WriteRequest: structs.WriteRequest{Region: "global"}}
	if err := s.RPC("Variables.Apply", req, &resp); err != nil {
		t.Fatalf("%s %s: %v", op, path, err)
	}
	return &resp
}

func varRead(t *testing.T, s *server.Server, path string, stale bool) *structs.VariableDecrypted {
	t.Helper()
	var resp structs.VariablesReadResponse
	if err := s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: path,
		QueryOptions: structs.QueryOptions{Region: "global", AllowStale: stale}}, &resp); err != nil {
		t.Fatalf("read %s on %s: %v", path, s.RPCAddr(), err)
	}
	return resp.Data
}

// waitKeyring waits until the cluster's first root key is active.
func waitKeyring(t *testing.T, s *server.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := s.State().ActiveRootKeyMeta(nil); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no active root key")
}

func TestVariablesApplyReadList(t *testing.T) {
	c := testcluster.NewTestCluster(t, 1)
	s := c.WaitForLeader(t, 10*time.Second)
	waitKeyring(t, s)

	out := varApply(t, s, structs.VarOpSet, "nomad/jobs/web", 0, structs.VariableItems{"user": "admin", "pass": "hunter2"})
	if out.Result != structs.VarOpResultOk || out.Output == nil || out.Output.Namespace != "default" || out.Output.CreateIndex == 0 || out.Output.CreateTime == 0 {
		t.Fatalf("set: %+v %+v", out, out.Output)
	}
	got := varRead(t, s, "nomad/jobs/web", false)
	if got == nil || got.Items["pass"] != "hunter2" || got.ModifyIndex != out.Output.ModifyIndex {
		t.Fatalf("read: %+v", got)
	}
	// The store holds ciphertext only.
	enc, err := s.State().VariableByPath(nil, "default", "nomad/jobs/web")
	if err != nil || bytes.Contains(enc.Data, []byte("hunter2")) || enc.KeyID == "" {
		t.Fatalf("stored form: %+v %v", enc, err)
	}

	// Check-and-set: create-only refuses an existing variable; a stale
	// index conflicts with the current value; the right one writes.
	c1 := varApply(t, s, structs.VarOpCAS, "nomad/jobs/web", 0, structs.VariableItems{"a": "b"})
	if !c1.IsConflict() || c1.Conflict.Items["user"] != "admin" {
		t.Fatalf("cas 0: %+v", c1)
	}
	c2 := varApply(t, s, structs.VarOpCAS, "nomad/jobs/web", out.Output.ModifyIndex, structs.VariableItems{"user": "root"})
	if c2.Result != structs.VarOpResultOk || c2.Output.CreateIndex != out.Output.CreateIndex || c2.Output.CreateTime != out.Output.CreateTime {
		t.Fatalf("cas: %+v", c2)
	}
	// A CAS on a missing variable with a non-zero index conflicts with an
	// empty one.
	if c3 := varApply(t, s, structs.VarOpCAS, "missing", 7, structs.VariableItems{"a": "b"}); !c3.IsConflict() || c3.Conflict.ModifyIndex != 0 || c3.Conflict.Items != nil {
		t.Fatalf("cas missing: %+v", c3)
	}

	// Validation: items required, path syntax, reserved paths, size.
	bad := []struct {
		path  string
		items structs.VariableItems
		code  structs.ErrorCode
	}{
		{"x", nil, structs.ErrCodeInvalid},
		{"a..b", structs.VariableItems{"a": "b"}, structs.ErrCodeInvalid},
		{"nomad/other", structs.VariableItems{"a": "b"}, structs.ErrCodeInvalid},
		{"big", structs.VariableItems{"a": strings.Repeat("x", structs.MaxVariableSize)}, structs.ErrCodeTooLarge},
	}
	for _, b := range bad {
		var resp structs.VariablesApplyResponse
		err := s.RPC("Variables.Apply", &structs.VariablesApplyRequest{Op: structs.VarOpSet,
			Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: b.path}, Items: b.items}}, &resp)
		if structs.CodeOf(err) != b.code {
			t.Errorf("%s: %v, want %s", b.path, err, b.code)
		}
	}

	// List: metadata only, by prefix; a blocking list wakes on a write.
	varApply(t, s, structs.VarOpSet, "nomad/jobs/web/group", 0, structs.VariableItems{"k": "v"})
	varApply(t, s, structs.VarOpSet, "other/thing", 0, structs.VariableItems{"k": "v"})
	var list structs.VariablesListResponse
	if err := s.RPC("Variables.List", &structs.VariablesListRequest{QueryOptions: structs.QueryOptions{Region: "global", Prefix: "nomad/"}}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 2 || list.Data[0].Path != "nomad/jobs/web" || list.Data[1].Path != "nomad/jobs/web/group" {
		t.Fatalf("list: %+v", list.Data)
	}
	done := make(chan *structs.VariablesReadResponse, 1)
	go func() {
		var resp structs.VariablesReadResponse
		_ = s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "nomad/jobs/web",
			QueryOptions: structs.QueryOptions{Region: "global", MinQueryIndex: c2.Output.ModifyIndex, MaxQueryTime: 10 * time.Second}}, &resp)
		done <- &resp
	}()
	time.Sleep(50 * time.Millisecond)
	w := varApply(t, s, structs.VarOpSet, "nomad/jobs/web", 0, structs.VariableItems{"user": "blocked"})
	select {
	case r := <-done:
		if r.Data == nil || r.Data.Items["user"] != "blocked" || r.Index != w.Output.ModifyIndex {
			t.Fatalf("blocking read answered %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking read did not wake")
	}

	// Delete-CAS with a stale index conflicts; delete removes.
	if d := varApply(t, s, structs.VarOpDeleteCAS, "nomad/jobs/web", 1, nil); !d.IsConflict() {
		t.Fatalf("stale delete: %+v", d)
	}
	if d := varApply(t, s, structs.VarOpDelete, "nomad/jobs/web", 0, nil); d.Result != structs.VarOpResultOk {
		t.Fatalf("delete: %+v", d)
	}
	if got := varRead(t, s, "nomad/jobs/web", false); got != nil {
		t.Fatalf("after delete: %+v", got)
	}
}

// TestKeyringThreeServers writes variables on a three-server cluster,
// rotates the key (plain and full), kills and restarts a follower, moves
// leadership, and checks every server decrypts every variable; then that
// no file of any server (raft.db, snapshots, keystore aside) holds an
// item in clear, and that key files are private.
func TestKeyringThreeServers(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 15*time.Second)
	waitKeyring(t, leader)
	secret := func(i int) string { return "plaintext-secret-value-" + string(rune('a'+i)) }
	paths := []string{}
	write := func(i int) {
		p := "nomad/jobs/app" + string(rune('a'+i))
		paths = append(paths, p)
		varApply(t, c.WaitForLeader(t, 15*time.Second), structs.VarOpSet, p, 0, structs.VariableItems{"secret": secret(i)})
	}
	checkAll := func(stage string) {
		t.Helper()
		for _, s := range c.Servers() {
			if s == nil {
				continue
			}
			deadline := time.Now().Add(10 * time.Second)
			for i, p := range paths {
				for {
					v := varRead(t, s, p, true)
					if v != nil && v.Items["secret"] == secret(i) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: server %s reads %s as %+v", stage, s.RPCAddr(), p, v)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	}
	rotate := func(full bool) *structs.RootKeyMeta {
		var resp structs.KeyringRotateRootKeyResponse
		if err := c.WaitForLeader(t, 15*time.Second).RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{Full: full,
			WriteRequest: structs.WriteRequest{Region: "global"}}, &resp); err != nil {
			t.Fatalf("rotate: %v", err)
		}
		return resp.Key
	}

	for i := 0; i < 3; i++ {
		write(i)
	}
	checkAll("after writes")
	k2 := rotate(false)
	write(3)
	checkAll("after rotate")

	// A follower is killed, misses a rotation and writes, and comes back.
	follower := 0
	for i, s := range c.Servers() {
		if s != leader {
			follower = i
			break
		}
	}
	c.Kill(follower)
	k3 := rotate(true)
	write(4)
	c.Restart(t, follower)
	checkAll("after follower restart")

	// Every variable now uses the key of the full rotation or a later one.
	vars, _ := c.WaitForLeader(t, 15*time.Second).State().Variables(nil, "*", "")
	for _, v := range vars {
		if v.KeyID == k2.KeyID {
			t.Errorf("%s still sealed with %s after a full rotation to %s", v.Path, k2.KeyID, k3.KeyID)
		}
	}

	// Leadership moves: the old leader is killed.
	old := c.Index(c.WaitForLeader(t, 15*time.Second))
	c.Kill(old)
	c.WaitForLeader(t, 15*time.Second)
	write(5)
	c.Restart(t, old)
	checkAll("after failover")

	var list structs.KeyringListRootKeyMetaResponse
	if err := c.WaitForLeader(t, 15*time.Second).RPC("Keyring.ListRootKeyMeta", &structs.KeyringListRootKeyMetaRequest{
		QueryOptions: structs.QueryOptions{Region: "global"}}, &list); err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, k := range list.Keys {
		if k.Active() {
			active++
			if k.KeyID != k3.KeyID {
				t.Errorf("active key %s, want %s", k.KeyID, k3.KeyID)
			}
		}
	}
	if len(list.Keys) != 3 || active != 1 {
		t.Fatalf("keys: %+v", list.Keys)
	}

	// Snapshots on every server, then no file holds an item in clear.
	for _, s := range c.Servers() {
		if err := s.Raft().Snapshot().Error(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	c.Shutdown()
	scanned := 0
	holding := map[string]int{} // file name -> servers whose file holds a variable's path
	for i := 0; i < 3; i++ {
		dir := c.DataDir(i)
		// Every server holds every key, fetched from its peers.
		if keys, err := os.ReadDir(filepath.Join(dir, "keystore")); err != nil || len(keys) != 3 {
			t.Errorf("server %d keystore: %d files, %v", i, len(keys), err)
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if strings.Contains(path, string(filepath.Separator)+"keystore"+string(filepath.Separator)) {
				info, err := d.Info()
				if err != nil {
					return err
				}
				if info.Mode().Perm() != 0o600 {
					t.Errorf("key file %s has mode %v, want 0600", path, info.Mode().Perm())
				}
				return nil
			}
			buf, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			scanned++
			if bytes.Contains(buf, []byte("plaintext-secret-value")) {
				t.Errorf("%s holds a variable's value in clear", path)
			}
			// The control: the paths (metadata, in clear) are there, so
			// the files scanned do hold the variables.
			if bytes.Contains(buf, []byte("nomad/jobs/appa")) {
				holding[filepath.Base(path)]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned < 6 || holding["raft.db"] != 3 || holding["state.bin"] != 3 {
		t.Fatalf("scanned %d files; files holding variables: %v (want raft.db and a snapshot's state.bin on each server)", scanned, holding)
	}
}

// Over TLS with verify_server_hostname, the servers fetch each other's
// keys (every server decrypts after a rotation), and Keyring.Get, the
// fetch, is refused to a client and to a cli certificate.
func TestTLSKeyringServerOnly(t *testing.T) {
	ca, c, leader := tlsCluster(t)
	waitKeyring(t, leader)
	varApply(t, leader, structs.VarOpSet, "nomad/jobs/tls", 0, structs.VariableItems{"k": "v1"})
	var rot structs.KeyringRotateRootKeyResponse
	if err := leader.RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{Full: true}, &rot); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if v := varRead(t, s, "nomad/jobs/tls", true); v != nil && v.Items["k"] == "v1" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %s does not read the variable", s.RPCAddr())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, role := range []tlsutil.Role{tlsutil.RoleClient, tlsutil.RoleCLI} {
		var resp structs.KeyringGetRootKeyResponse
		err := rpctest.Pool(t, ca, role).RPC(leader.RPCAddr(), "Keyring.Get", &structs.KeyringGetRootKeyRequest{KeyID: rot.Key.KeyID}, &resp)
		rpctest.WantDenied(t, fmt.Sprintf("Keyring.Get with a %v certificate", role), err)
		if resp.Key != nil {
			t.Fatalf("key material answered to a %s certificate", role)
		}
	}
}

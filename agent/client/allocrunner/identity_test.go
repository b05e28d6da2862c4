package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/structs"
)

// A task whose identity block asks for it gets its token in NOMAD_TOKEN
// and secrets/nomad_token (0600); a task without the block gets neither;
// a token that cannot be fetched fails the task's setup.
func TestTaskIdentityEnvAndFile(t *testing.T) {
	e := newEnv(t)
	withID := rawExec("with", `printf '%s|' "$NOMAD_TOKEN"; cat "$NOMAD_SECRETS_DIR/nomad_token"`)
	withID.Identity = &structs.WorkloadIdentity{Env: true, File: true}
	without := rawExec("without", `printf '%s|' "$NOMAD_TOKEN"; ls "$NOMAD_SECRETS_DIR"`)
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), withID, without)
	var asked []string
	ar, err := New(Config{Alloc: a, AllocRoot: e.root, Drivers: testDrivers(), StateDB: e.db,
		Updater: e.rec.update, Node: NodeInfo{ID: "n1", Region: "global"},
		Identity: func(allocID, task string) (string, error) {
			asked = append(asked, task)
			return "token-of-" + allocID + "-" + task, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ar.Run()
	<-ar.DoneCh()
	e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	want := "token-of-" + a.ID + "-with"
	out, _ := os.ReadFile(filepath.Join(e.root, a.ID, "alloc", "logs", "with.stdout.0"))
	if string(out) != want+"|"+want {
		t.Fatalf("with identity: %q", out)
	}
	out, _ = os.ReadFile(filepath.Join(e.root, a.ID, "alloc", "logs", "without.stdout.0"))
	if string(out) != "|" {
		t.Fatalf("without identity: %q", out)
	}
	info, err := os.Stat(filepath.Join(e.root, a.ID, "with", "secrets", "nomad_token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", info, err)
	}
	if len(asked) != 1 || asked[0] != "with" {
		t.Fatalf("identities asked for %v", asked)
	}

	// The servers refuse: the task fails setup.
	e2 := newEnv(t)
	b := testAlloc(structs.JobTypeBatch, failPolicy(0), withID)
	ar2, err := New(Config{Alloc: b, AllocRoot: e2.root, Drivers: testDrivers(), StateDB: e2.db,
		Updater: e2.rec.update, Node: NodeInfo{ID: "n1", Region: "global"},
		Identity: func(string, string) (string, error) { return "", errors.New("no leader") }})
	if err != nil {
		t.Fatal(err)
	}
	ar2.Run()
	<-ar2.DoneCh()
	got := e2.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	if ev := findEvent(got.TaskStates.MustMap()["with"], structs.TaskSetupFailure); ev == nil {
		t.Fatalf("no setup failure: %s", describe(got))
	}
}

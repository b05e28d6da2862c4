package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestDispatchPayloadWritten: the payload of a dispatched job is in
// local/<file> (directories made) before the task starts; the task reads
// it from there.
func TestDispatchPayloadWritten(t *testing.T) {
	e := newEnv(t)
	task := rawExec("reader", `cat "$NOMAD_TASK_DIR/in/payload.bin"`)
	task.DispatchPayload = &structs.DispatchPayloadConfig{File: "in/payload.bin"}
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	a.Job.Payload = []byte("payload bytes")
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	out, err := os.ReadFile(filepath.Join(e.root, a.ID, "alloc", "logs", "reader.stdout.0"))
	if err != nil || string(out) != "payload bytes" {
		t.Fatalf("the task read %q, %v", out, err)
	}
}

// TestDispatchPayloadEscapeRefused: a file outside local/ (refused at
// registration) fails the task rather than writing there; a job without a
// payload writes no file.
func TestDispatchPayloadEscapeRefused(t *testing.T) {
	e := newEnv(t)
	task := rawExec("reader", "true")
	task.DispatchPayload = &structs.DispatchPayloadConfig{File: "../../escaped"}
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	a.Job.Payload = []byte("x")
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	if _, err := os.Stat(filepath.Join(e.root, a.ID, "escaped")); !os.IsNotExist(err) {
		t.Fatalf("payload written outside local/: %v", err)
	}

	task = rawExec("reader", "true")
	task.DispatchPayload = &structs.DispatchPayloadConfig{File: "p"}
	a = testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	ar = e.start(t, a, nil)
	<-ar.DoneCh()
	e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	if _, err := os.Stat(filepath.Join(e.root, a.ID, "reader", "local")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.root, a.ID, "reader", "local", "p")); !os.IsNotExist(err) {
		t.Fatalf("a job without a payload wrote the file: %v", err)
	}
}

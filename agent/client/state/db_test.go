package state

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client", "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{{
		Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "x"}},
	}}}}}
	a := &structs.Allocation{ID: "a1", JobID: "j", TaskGroup: "g", Job: job, ClientStatus: "running"}
	if err := db.PutAlloc(a); err != nil {
		t.Fatal(err)
	}
	ts := &TaskRunnerState{
		State:  &structs.TaskState{State: structs.TaskStateRunning, Restarts: 2, Events: []*structs.TaskEvent{{Type: structs.TaskStarted}}},
		Handle: &driver.HandleState{Driver: "raw_exec", PID: 42, ProcStartTime: 99, StartedAt: time.Unix(10, 0).UTC(), Data: map[string]string{"k": "v"}},
	}
	if err := db.PutTaskState("a1", "t", ts); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskState("missing", "t", ts); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("task state for a missing alloc: %v", err)
	}
	db.Close()

	// Another open while one holds the lock would time out; reopen after
	// close loads everything.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.Allocs()
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %v err %v", entries, err)
	}
	e := entries[0]
	if e.Alloc.ID != "a1" || e.Alloc.Job == nil || e.Alloc.Job.TaskGroups[0].Tasks[0].Config["command"] != "/bin/sh" {
		t.Fatalf("alloc = %+v", e.Alloc)
	}
	got := e.Tasks["t"]
	if got == nil || got.Handle.PID != 42 || got.Handle.ProcStartTime != 99 || got.State.Restarts != 2 ||
		!got.Handle.StartedAt.Equal(ts.Handle.StartedAt) || !reflect.DeepEqual(got.Handle.Data, ts.Handle.Data) {
		t.Fatalf("task state = %+v / %+v", got.State, got.Handle)
	}
	if err := db.DeleteAlloc("a1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAlloc("a1"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if entries, _ := db.Allocs(); len(entries) != 0 {
		t.Fatalf("after delete: %d entries", len(entries))
	}
}

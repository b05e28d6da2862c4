package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/structs"
)

// Fuzz targets for what the FSM reads: Raft log entries (Apply) and
// snapshots (Restore). A panic in Apply stops every server that applies
// the entry, that is all of them, and again after every restart; a panic
// in Restore stops a server that is catching up. See docs/security.md.

// maxFSMFuzzInput bounds the entries and snapshots tried.
const maxFSMFuzzInput = 64 << 10

// goldenEntries are the Raft entries in structs/testdata/codec-golden, one
// per message type, in type order: coherent fixtures (the plan places
// allocations of the registered job on the registered node).
var goldenEntries = sync.OnceValues(func() ([][]byte, error) {
	files, err := filepath.Glob("../structs/testdata/codec-golden/*.msgpack")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("golden entries: %v %v", files, err)
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
})

// baseEntries builds the state each input is applied to: the golden node
// registration, plan results and client update, so that an entry naming
// the fixtures' node, job, allocations and evaluations finds them.
var baseEntries = []string{"00-NodeRegister", "10-ApplyPlanResults", "12-ApplyPlanResultsGrouped", "09-AllocClientUpdate"}

// baseFSM returns a new FSM holding the base state, at index 100.
func baseFSM(t testing.TB) *FSM {
	t.Helper()
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range baseEntries {
		b, err := os.ReadFile(filepath.Join("../structs/testdata/codec-golden", name+".msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		if res := f.Apply(&raft.Log{Index: uint64(10 + i), Type: raft.LogCommand, Data: b}); res != nil {
			t.Fatalf("base entry %s: %v", name, res)
		}
	}
	return f
}

// FuzzApply applies an arbitrary entry (first byte: message type) to the
// base state, on two FSMs. It must not panic, except as documented for a
// type this server does not know that lacks structs.IgnoreUnknownTypeFlag
// (the server is too old for the log and must stop); both FSMs must give
// the same result and reach the same state (every server applies the
// same entries and must agree).
func FuzzApply(f *testing.F) {
	golden, err := goldenEntries()
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range golden {
		f.Add(b)
		ignorable := append([]byte{b[0] | byte(structs.IgnoreUnknownTypeFlag)}, b[1:]...)
		f.Add(ignorable)
	}
	for _, e := range nullEntries(f) {
		f.Add(e.data)
	}
	f.Add([]byte{byte(structs.JobRegisterRequestType)})
	f.Add([]byte{byte(structs.IgnoreUnknownTypeFlag) | 0x7f, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFSMFuzzInput {
			t.Skip()
		}
		a, b := baseFSM(t), baseFSM(t)
		ra, unknownA := applyFuzzEntry(a, data)
		rb, unknownB := applyFuzzEntry(b, data)
		if unknownA || unknownB {
			if unknownA != unknownB {
				t.Fatal("one FSM stopped at an unknown type and the other did not")
			}
			return
		}
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Fatalf("results differ: %v / %v", ra, rb)
		}
		if ra != nil {
			if _, isErr := ra.(error); !isErr {
				t.Fatalf("result %T is neither nil nor an error: %v", ra, ra)
			}
		}
		if err := diffState(a.State(), b.State()); err != nil {
			t.Fatalf("two servers applying the same entry differ: %v", err)
		}
	})
}

// unknownTypePanic starts the one panic Apply documents.
const unknownTypePanic = "fsm: unknown message type"

// applyFuzzEntry applies data at index 1000. unknown reports the
// documented stop at an unknown message type; any other panic is passed
// on to fail the input.
func applyFuzzEntry(f *FSM, data []byte) (result any, unknown bool) {
	defer func() {
		if r := recover(); r != nil {
			if s, ok := r.(string); ok && strings.HasPrefix(s, unknownTypePanic) {
				unknown = true
				return
			}
			panic(r)
		}
	}()
	return f.Apply(&raft.Log{Index: 1000, Type: raft.LogCommand, Data: data}), false
}

// maxRestoreAlloc bounds what reading one fuzz snapshot may allocate:
// the reader's two 1 MiB buffers, frames read as their bytes arrive (at
// most frameReadStep ahead of them), and go-msgpack's collections, which
// it caps however long their length prefix claims they are.
const maxRestoreAlloc = 32 << 20

// FuzzRestore restores arbitrary bytes, and the same bytes with their
// checksum recomputed (so that damage behind the checksum reaches the
// decoder and the store), into an FSM holding the base state. It must
// not panic; a failed restore returns an error wrapping
// ErrCorruptSnapshot and leaves the state as it was; a restore must not
// allocate more than maxRestoreAlloc.
func FuzzRestore(f *testing.F) {
	base := baseFSM(f)
	snap := persist(f, base)
	f.Add(snap)
	empty, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(persist(f, empty))
	for _, s := range nullSnapshots(f) {
		f.Add(s)
	}
	f.Add(snap[:len(snap)/2])
	f.Add(flip(snap, len(snap)/3))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFSMFuzzInput {
			t.Skip()
		}
		for _, in := range [][]byte{data, withChecksum(data)} {
			fsm := baseFSM(t)
			before := fsm.State()
			var err error
			alloc := allocated(func() { err = fsm.Restore(io.NopCloser(bytes.NewReader(in))) })
			if alloc > maxRestoreAlloc {
				t.Fatalf("restoring %d bytes allocated %d bytes", len(in), alloc)
			}
			if err == nil {
				continue
			}
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("restore error does not wrap ErrCorruptSnapshot: %v", err)
			}
			if fsm.State() != before {
				t.Fatal("a failed restore replaced the state")
			}
		}
	})
}

// withChecksum returns a copy of b with its last four bytes replaced by
// the CRC of the rest, as a writer would have written it.
func withChecksum(b []byte) []byte {
	if len(b) < trailerLen {
		return b
	}
	out := bytes.Clone(b)
	body := out[:len(out)-trailerLen]
	binary.BigEndian.PutUint32(out[len(body):], crc32Update(0, body))
	return out
}

// allocated returns the bytes fn allocated (process-wide; the fuzzer runs
// one input at a time per process).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Found by FuzzRestore's allocation bound: a frame's 4-byte length was
// trusted, so 17 bytes of snapshot made the reader allocate 64 MiB (the
// largest frame) before finding the bytes missing.
func TestFuzzRegressionFrameLength(t *testing.T) {
	var buf bytes.Buffer
	buf.Write(mustEncode(t, &snapshotHeader{Magic: snapshotMagic, FormatVersion: snapshotFormatVersion}))
	buf.Write([]byte{0x03, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	var err error
	alloc := allocated(func() { _, err = ReadSnapshot(bytes.NewReader(buf.Bytes())) })
	if !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("err = %v; want a corrupt snapshot", err)
	}
	if alloc > 16<<20 {
		t.Fatalf("reading %d bytes allocated %d bytes", buf.Len(), alloc)
	}
}

type namedEntry struct {
	name string
	data []byte
}

// nullEntries are entries with a null element in a list the store walks,
// each as the body of the message type that carries it.
func nullEntries(tb testing.TB) []namedEntry {
	alloc := &structs.Allocation{ID: "c0000000-0000-0000-0000-000000000001"}
	cases := []struct {
		name string
		t    structs.MessageType
		msg  any
	}{
		{"node register evals", structs.NodeRegisterRequestType,
			&structs.NodeRegisterRequest{Node: &structs.Node{ID: "n"}, CreateEvals: []*structs.Evaluation{nil}}},
		{"node status evals", structs.NodeUpdateStatusRequestType,
			&structs.NodeUpdateStatusRequest{NodeID: "n", CreateEvals: []*structs.Evaluation{nil}}},
		{"job group", structs.JobRegisterRequestType,
			&structs.JobRegisterRequest{Job: &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{nil}}}},
		{"job task", structs.JobRegisterRequestType,
			&structs.JobRegisterRequest{Job: &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{nil}}}}}},
		{"eval update", structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{nil}}},
		{"client update allocs", structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{nil}}},
		{"client update evals", structs.AllocClientUpdateRequestType,
			&structs.AllocUpdateRequest{Alloc: []*structs.Allocation{alloc}, Evals: []*structs.Evaluation{nil}}},
		{"plan updated", structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{nil}}},
		{"plan stopped", structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{nil}}},
		{"plan evals", structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Evals: []*structs.Evaluation{nil}}},
		{"transition evals", structs.AllocUpdateDesiredTransitionRequestType,
			&structs.AllocUpdateDesiredTransitionRequest{Evals: []*structs.Evaluation{nil}}},
	}
	out := make([]namedEntry, len(cases))
	for i, c := range cases {
		buf, err := structs.Encode(c.t, c.msg)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = namedEntry{c.name, buf}
	}
	return out
}

// Found while probing the paths FuzzApply reaches slowly (a null element
// takes a mutation of the right byte): an entry with a null evaluation,
// allocation, task group or task in a list panicked in the store, on every
// server. It is now refused with an invalid-input error and writes nothing.
func TestFuzzRegressionNullElements(t *testing.T) {
	for _, e := range nullEntries(t) {
		t.Run(e.name, func(t *testing.T) {
			f := baseFSM(t)
			before, _ := f.State().LatestIndex()
			res, unknown := applyFuzzEntry(f, e.data)
			if unknown {
				t.Fatal("stopped at an unknown type")
			}
			if err, ok := res.(error); !ok || structs.CodeOf(err) != structs.ErrCodeInvalid ||
				!strings.Contains(err.Error(), "null element") {
				t.Fatalf("Apply returned %v; want a null element refused", res)
			}
			if after, _ := f.State().LatestIndex(); after != before {
				t.Fatal("a refused entry changed the state")
			}
		})
	}
}

// snapshotOf writes a snapshot of one frame holding records, given as
// (type, object) pairs, with a valid end marker and checksum.
func snapshotOf(tb testing.TB, recs ...any) []byte {
	var out bytes.Buffer
	out.Write(mustEncode(tb, &snapshotHeader{Magic: snapshotMagic, FormatVersion: snapshotFormatVersion}))
	frame := mustEncode(tb, uint64(len(recs)/2))
	for _, r := range recs {
		frame = append(frame, mustEncode(tb, r)...)
	}
	out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
	out.Write(frame)
	out.Write(binary.BigEndian.AppendUint32(nil, 0))
	out.Write(binary.BigEndian.AppendUint64(nil, uint64(len(recs)/2)))
	return withChecksum(append(out.Bytes(), 0, 0, 0, 0))
}

// nullSnapshots are snapshots holding a job with a null task group or task.
func nullSnapshots(tb testing.TB) [][]byte {
	return [][]byte{
		snapshotOf(tb, recJob, &structs.Job{ID: "j", Namespace: "default", TaskGroups: []*structs.TaskGroup{nil}}),
		snapshotOf(tb, recJob, &structs.Job{ID: "j", Namespace: "default",
			TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{nil}}}}),
	}
}

// Found with the null-element probe of Apply (see above), on the snapshot
// side: a snapshot whose job held a null task group or task restored, for
// the scheduler and the API to dereference later. It is refused now.
func TestFuzzRegressionSnapshotNullElements(t *testing.T) {
	for _, snap := range nullSnapshots(t) {
		_, err := ReadSnapshot(bytes.NewReader(snap))
		if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), "null element") {
			t.Fatalf("err = %v; want the null element refused", err)
		}
	}
}

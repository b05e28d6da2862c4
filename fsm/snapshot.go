package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-metrics"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Snapshot format, version 1. All msgpack uses structs.MsgpackHandle.
//
//	header   msgpack snapshotHeader{Magic, FormatVersion, LastIndex}
//	records  each: one type byte, then
//	           recIndex, recNode, recJobSummary, recEval: the msgpack row
//	           recJob, recAllocJob: the msgpack job; jobs are numbered 1, 2,
//	             ... in the order they appear
//	           recAlloc: uvarint job number (0: no job), then the msgpack
//	             allocation with Job omitted
//	end      recEnd, then msgpack uint64: number of records
//	trailer  4 bytes big-endian CRC-32 (Castagnoli) of everything before it
//
// Allocations share job objects in the store (every allocation of a plan
// points at one job); numbering jobs writes each once and restores the
// sharing. recAllocJob carries a job version that allocations still run
// but the jobs table no longer holds.
const (
	snapshotMagic         = "drover-snapshot"
	snapshotFormatVersion = 1
)

const (
	recIndex byte = iota + 1
	recNode
	recJob
	recJobSummary
	recEval
	recAllocJob
	recAlloc
	recEnd byte = 0xff
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSnapshot is wrapped by every error ReadSnapshot returns for a
// snapshot that is truncated, altered or not a Drover snapshot.
var ErrCorruptSnapshot = errors.New("corrupt or truncated snapshot")

type snapshotHeader struct {
	Magic         string
	FormatVersion int
	LastIndex     uint64
}

// Snapshot captures the current state for Persist. It is O(1).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap, logger: f.logger}, nil
}

type fsmSnapshot struct {
	snap   *state.StateSnapshot
	logger hclog.Logger
}

// Persist streams the snapshot to sink, closing it on success and
// cancelling it on error.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	defer metrics.MeasureSince(metricKey(metricPersist), time.Now())
	if err := WriteSnapshot(sink, s.snap); err != nil {
		s.logger.Error("persisting snapshot failed", "snapshot_id", sink.ID(), "error", err)
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release does nothing: a memdb snapshot needs no cleanup.
func (s *fsmSnapshot) Release() {}

// Restore replaces the state with the snapshot read from rc. The snapshot
// is loaded into a fresh store and fully verified first; on any error the
// current state is left untouched. On success the old store is abandoned,
// which wakes blocking queries so they re-run on the new one.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer metrics.MeasureSince(metricKey(metricRestore), time.Now())
	defer rc.Close()
	store, err := ReadSnapshot(rc)
	if err != nil {
		f.logger.Error("restoring snapshot failed; state unchanged", "error", err)
		return err
	}
	old := f.state.Swap(store)
	old.Abandon(store)
	return nil
}

// crcWriter passes writes through to w, summing them.
type crcWriter struct {
	w   io.Writer
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, crcTable, p[:n])
	return n, err
}

// snapshotWriter writes records through one encoder over one buffer.
type snapshotWriter struct {
	bw      *bufio.Writer
	enc     *codec.Encoder
	records uint64
	jobRefs map[*structs.Job]uint64
	scratch [binary.MaxVarintLen64]byte
}

func (w *snapshotWriter) record(t byte, v any) error {
	if err := w.bw.WriteByte(t); err != nil {
		return err
	}
	w.records++
	return w.enc.Encode(v)
}

// job writes a job record unless that job object was written already, and
// returns its number.
func (w *snapshotWriter) job(t byte, j *structs.Job) (uint64, error) {
	if ref, ok := w.jobRefs[j]; ok {
		return ref, nil
	}
	if err := w.record(t, j); err != nil {
		return 0, err
	}
	ref := uint64(len(w.jobRefs) + 1)
	w.jobRefs[j] = ref
	return ref, nil
}

func (w *snapshotWriter) alloc(a *structs.Allocation) error {
	var ref uint64
	if a.Job != nil {
		var err error
		if ref, err = w.job(recAllocJob, a.Job); err != nil {
			return err
		}
	}
	if err := w.bw.WriteByte(recAlloc); err != nil {
		return err
	}
	n := binary.PutUvarint(w.scratch[:], ref)
	if _, err := w.bw.Write(w.scratch[:n]); err != nil {
		return err
	}
	w.records++
	stripped := *a
	stripped.Job = nil
	return w.enc.Encode(&stripped)
}

// WriteSnapshot writes snap to out in the snapshot format. It is what
// Persist uses, and what an operator snapshot can use.
func WriteSnapshot(out io.Writer, snap *state.StateSnapshot) error {
	lastIndex, err := snap.LatestIndex()
	if err != nil {
		return err
	}
	cw := &crcWriter{w: out}
	w := &snapshotWriter{bw: bufio.NewWriterSize(cw, 1<<20), jobRefs: map[*structs.Job]uint64{}}
	w.enc = codec.NewEncoder(w.bw, structs.MsgpackHandle)
	hdr := snapshotHeader{Magic: snapshotMagic, FormatVersion: snapshotFormatVersion, LastIndex: lastIndex}
	if err := w.enc.Encode(&hdr); err != nil {
		return fmt.Errorf("fsm: writing snapshot header: %w", err)
	}
	if err := writeTables(w, snap); err != nil {
		return fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	if err := w.bw.WriteByte(recEnd); err != nil {
		return err
	}
	if err := w.enc.Encode(w.records); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	var trailer [4]byte
	binary.BigEndian.PutUint32(trailer[:], cw.crc)
	if _, err := out.Write(trailer[:]); err != nil {
		return fmt.Errorf("fsm: writing snapshot checksum: %w", err)
	}
	return nil
}

func writeTables(w *snapshotWriter, snap *state.StateSnapshot) error {
	indexes, err := snap.Indexes()
	if err != nil {
		return err
	}
	for _, e := range indexes {
		if err := w.record(recIndex, e); err != nil {
			return err
		}
	}
	nodes, err := snap.Nodes(nil)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := w.record(recNode, n); err != nil {
			return err
		}
	}
	jobs, err := snap.Jobs(nil)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if _, err := w.job(recJob, j); err != nil {
			return err
		}
	}
	sums, err := snap.JobSummaries(nil)
	if err != nil {
		return err
	}
	for _, js := range sums {
		if err := w.record(recJobSummary, js); err != nil {
			return err
		}
	}
	evals, err := snap.Evals(nil)
	if err != nil {
		return err
	}
	for _, e := range evals {
		if err := w.record(recEval, e); err != nil {
			return err
		}
	}
	allocs, err := snap.Allocs(nil)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if err := w.alloc(a); err != nil {
			return err
		}
	}
	return nil
}

// trailerReader returns every byte of r except the last four, which it
// keeps as the trailer, and sums the bytes it returns.
type trailerReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	crc        uint32
}

const trailerLen = 4

func (t *trailerReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if avail := t.end - t.start - trailerLen; avail > 0 {
			n := copy(p, t.buf[t.start:t.start+avail])
			t.crc = crc32.Update(t.crc, crcTable, p[:n])
			t.start += n
			return n, nil
		}
		if t.eof {
			return 0, io.EOF
		}
		if t.start > 0 {
			t.end = copy(t.buf, t.buf[t.start:t.end])
			t.start = 0
		}
		n, err := t.r.Read(t.buf[t.end:])
		t.end += n
		if err == io.EOF {
			t.eof = true
		} else if err != nil {
			return 0, err
		}
	}
}

// trailer returns the checksum once r is exhausted.
func (t *trailerReader) trailer() (uint32, bool) {
	if !t.eof || t.end-t.start != trailerLen {
		return 0, false
	}
	return binary.BigEndian.Uint32(t.buf[t.start:t.end]), true
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("fsm: %w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
}

// ReadSnapshot reads a snapshot written by WriteSnapshot into a new store.
// It verifies the header, every record, the end marker and the checksum;
// any failure returns an error wrapping ErrCorruptSnapshot (or the read
// error) and no store.
func ReadSnapshot(r io.Reader) (*state.StateStore, error) {
	tr := &trailerReader{r: r, buf: make([]byte, 1<<20)}
	br := bufio.NewReaderSize(tr, 1<<20)
	dec := codec.NewDecoder(br, structs.MsgpackHandle)

	var hdr snapshotHeader
	if err := dec.Decode(&hdr); err != nil {
		return nil, corrupt("reading header: %v", err)
	}
	if hdr.Magic != snapshotMagic {
		return nil, corrupt("not a Drover snapshot (magic %q)", hdr.Magic)
	}
	if hdr.FormatVersion != snapshotFormatVersion {
		return nil, corrupt("unsupported format version %d (this server reads %d)", hdr.FormatVersion, snapshotFormatVersion)
	}
	store, err := state.NewStateStore()
	if err != nil {
		return nil, err
	}
	restore := store.Restore()
	defer restore.Abort()
	if err := readRecords(br, dec, restore); err != nil {
		return nil, err
	}
	// Nothing may follow the end record but the checksum.
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, corrupt("data after end record")
	}
	want, ok := tr.trailer()
	if !ok {
		return nil, corrupt("missing checksum")
	}
	if want != tr.crc {
		return nil, corrupt("checksum mismatch: stored %08x, computed %08x", want, tr.crc)
	}
	restore.Commit()
	last, err := store.LatestIndex()
	if err != nil {
		return nil, err
	}
	if last != hdr.LastIndex {
		return nil, corrupt("header says last index %d, tables say %d", hdr.LastIndex, last)
	}
	return store, nil
}

func readRecords(br *bufio.Reader, dec *codec.Decoder, restore *state.StateRestore) error {
	var jobs []*structs.Job
	var records uint64
	for {
		t, err := br.ReadByte()
		if err != nil {
			return corrupt("reading record %d: %v", records, err)
		}
		if t == recEnd {
			var n uint64
			if err := dec.Decode(&n); err != nil {
				return corrupt("reading end record: %v", err)
			}
			if n != records {
				return corrupt("end record counts %d records, read %d", n, records)
			}
			return nil
		}
		records++
		if err := readRecord(t, br, dec, restore, &jobs); err != nil {
			return corrupt("record %d (type %d): %v", records, t, err)
		}
	}
}

func readRecord(t byte, br *bufio.Reader, dec *codec.Decoder, restore *state.StateRestore, jobs *[]*structs.Job) error {
	switch t {
	case recIndex:
		e := new(state.IndexEntry)
		if err := dec.Decode(e); err != nil {
			return err
		}
		return restore.IndexRestore(e)
	case recNode:
		n := new(structs.Node)
		if err := dec.Decode(n); err != nil {
			return err
		}
		return restore.NodeRestore(n)
	case recJob, recAllocJob:
		j := new(structs.Job)
		if err := dec.Decode(j); err != nil {
			return err
		}
		*jobs = append(*jobs, j)
		if t == recJob {
			return restore.JobRestore(j)
		}
		return nil
	case recJobSummary:
		js := new(structs.JobSummary)
		if err := dec.Decode(js); err != nil {
			return err
		}
		return restore.JobSummaryRestore(js)
	case recEval:
		e := new(structs.Evaluation)
		if err := dec.Decode(e); err != nil {
			return err
		}
		return restore.EvalRestore(e)
	case recAlloc:
		ref, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		if ref > uint64(len(*jobs)) {
			return fmt.Errorf("allocation refers to job %d of %d", ref, len(*jobs))
		}
		a := new(structs.Allocation)
		if err := dec.Decode(a); err != nil {
			return err
		}
		if ref > 0 {
			a.Job = (*jobs)[ref-1]
		}
		return restore.AllocRestore(a)
	}
	return fmt.Errorf("unknown record type")
}

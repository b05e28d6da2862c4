package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

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
			t.crc = crc32Update(t.crc, p[:n])
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

// readFailed reports a failed read: running out of bytes means the
// snapshot is truncated; any other error is the reader's own.
func readFailed(err error, format string, args ...any) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("%s: truncated", fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("fsm: %s: %w", fmt.Sprintf(format, args...), err)
}

// decoded is one record read from a snapshot.
type decoded struct {
	t   byte
	ref uint64
	v   any
}

// frame is one frame on its way from the reader through a decoder to the
// inserter. done is closed once records (or err) is set.
type frame struct {
	seq     int
	data    *[]byte
	records []decoded
	err     error
	done    chan struct{}
}

// ReadSnapshot reads a snapshot written by WriteSnapshot into a new store.
// It verifies the header, every record, the end marker and the checksum;
// on any failure it returns an error wrapping ErrCorruptSnapshot (or the
// reader's error) and no store. Nothing is visible in the new store until
// everything has been verified.
//
// One goroutine reads frames, one decoder per core decodes them, and the
// calling goroutine inserts them in order into one restore transaction.
// opts configure the new store.
func ReadSnapshot(r io.Reader, opts ...state.Option) (*state.StateStore, error) {
	tr := &trailerReader{r: r, buf: make([]byte, 1<<20)}
	br := bufio.NewReaderSize(tr, 1<<20)

	var hdr snapshotHeader
	if err := codec.NewDecoder(br, structs.MsgpackHandle).Decode(&hdr); err != nil {
		return nil, corrupt("reading header: %v", err)
	}
	if hdr.Magic != snapshotMagic {
		return nil, corrupt("not a Drover snapshot (magic %q)", hdr.Magic)
	}
	if hdr.FormatVersion != snapshotFormatVersion {
		return nil, corrupt("unsupported format version %d (this server reads %d)", hdr.FormatVersion, snapshotFormatVersion)
	}
	store, err := state.NewStateStore(opts...)
	if err != nil {
		return nil, err
	}
	restore := store.Restore()
	defer restore.Abort()

	workers := runtime.GOMAXPROCS(0)
	work := make(chan *frame, workers)
	ordered := make(chan *frame, 2*workers)
	quit := make(chan struct{})
	bufs := sync.Pool{New: func() any { return new([]byte) }}
	readErr := make(chan error, 1)
	var wg sync.WaitGroup

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(ordered)
		readErr <- readFrames(br, tr, &bufs, work, ordered, quit)
	}()
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := codec.NewDecoderBytes(nil, structs.MsgpackHandle)
			for f := range work {
				f.records, f.err = decodeFrame(dec, *f.data)
				bufs.Put(f.data)
				close(f.done)
			}
		}()
	}

	ins := &inserter{restore: restore}
	var insErr error
	for f := range ordered {
		<-f.done
		if insErr != nil {
			continue
		}
		if f.err != nil {
			insErr = corrupt("frame %d: %v", f.seq, f.err)
		} else {
			insErr = ins.insertAll(f.records)
		}
		if insErr != nil {
			close(quit)
		}
	}
	wg.Wait()
	if err := <-readErr; err != nil && !errors.Is(err, errQuit) {
		return nil, err
	}
	if insErr != nil {
		return nil, insErr
	}
	if ins.records != ins.expected {
		return nil, corrupt("end record counts %d records, read %d", ins.expected, ins.records)
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

// errQuit reports that reading stopped because the inserter failed.
var errQuit = errors.New("stopped")

// readFrames reads frames and hands each to a decoder and, in order, to
// the inserter. After the end marker it checks that only the checksum
// follows and that it matches; the total record count is passed on as a
// final frame-less entry via the last frame's records (see inserter).
func readFrames(br *bufio.Reader, tr *trailerReader, bufs *sync.Pool, work, ordered chan<- *frame, quit <-chan struct{}) error {
	var word [8]byte
	for seq := 1; ; seq++ {
		if _, err := io.ReadFull(br, word[:4]); err != nil {
			return readFailed(err, "reading frame %d length", seq)
		}
		n := uint64(binary.BigEndian.Uint32(word[:4]))
		if n == 0 {
			break
		}
		if n > maxFrameLen {
			return corrupt("frame %d is %d bytes, more than %d", seq, n, maxFrameLen)
		}
		data := bufs.Get().(*[]byte)
		if err := readFrame(br, data, int(n)); err != nil {
			return readFailed(err, "reading frame %d", seq)
		}
		f := &frame{seq: seq, data: data, done: make(chan struct{})}
		select {
		case work <- f:
		case <-quit:
			return errQuit
		}
		select {
		case ordered <- f:
		case <-quit:
			return errQuit
		}
	}
	if _, err := io.ReadFull(br, word[:8]); err != nil {
		return readFailed(err, "reading end marker")
	}
	total := binary.BigEndian.Uint64(word[:8])
	// Nothing may follow the end marker but the checksum.
	if _, err := br.ReadByte(); err != io.EOF {
		return corrupt("data after end marker")
	}
	want, ok := tr.trailer()
	if !ok {
		return corrupt("missing checksum")
	}
	if want != tr.crc {
		return corrupt("checksum mismatch: stored %08x, computed %08x", want, tr.crc)
	}
	end := &frame{seq: -1, done: make(chan struct{}), records: []decoded{{t: recTotal, ref: total}}}
	close(end.done)
	select {
	case ordered <- end:
		return nil
	case <-quit:
		return errQuit
	}
}

// frameReadStep is how much of a frame is read (and room made for) at a
// time: a frame's length is trusted only as far as its bytes arrive, so a
// damaged length costs at most one step of memory, not maxFrameLen.
// Writers' frames (frameTargetLen and a little) take one step.
const frameReadStep = 4 << 20

// readFrame reads the n bytes of a frame into *data, reusing its storage.
func readFrame(r io.Reader, data *[]byte, n int) error {
	b := (*data)[:0]
	for len(b) < n {
		step := min(n-len(b), frameReadStep)
		b = slices.Grow(b, step)
		got, err := io.ReadFull(r, b[len(b):len(b)+step])
		b = b[:len(b)+got]
		if err != nil {
			*data = b
			return err
		}
	}
	*data = b
	return nil
}

// recTotal marks the pseudo-record carrying the end marker's count; it
// never appears in a stream.
const recTotal byte = 0

// decodeFrame decodes every record of one frame.
func decodeFrame(dec *codec.Decoder, data []byte) ([]decoded, error) {
	dec.ResetBytes(data)
	var count uint64
	if err := dec.Decode(&count); err != nil {
		return nil, err
	}
	if count == 0 || count > uint64(len(data)) {
		return nil, fmt.Errorf("bad record count %d", count)
	}
	out := make([]decoded, count)
	for i := range out {
		d := &out[i]
		if err := dec.Decode(&d.t); err != nil {
			return nil, err
		}
		switch d.t {
		case recIndex:
			d.v = new(state.IndexEntry)
		case recNode:
			d.v = new(structs.Node)
		case recJob, recAllocJob, recJobVersion:
			d.v = new(structs.Job)
		case recJobSummary:
			d.v = new(structs.JobSummary)
		case recEval:
			d.v = new(structs.Evaluation)
		case recACLPolicy:
			d.v = new(structs.ACLPolicy)
		case recACLToken:
			d.v = new(structs.ACLToken)
		case recACLCluster:
			d.v = new(structs.ACLClusterSecret)
		case recVariable:
			d.v = new(structs.VariableEncrypted)
		case recRootKeyMeta:
			d.v = new(structs.RootKeyMeta)
		case recServiceRegistration:
			d.v = new(structs.ServiceRegistration)
		case recScalingEvents:
			d.v = new(structs.JobScalingEvents)
		case recPeriodicLaunch:
			d.v = new(structs.PeriodicLaunch)
		case recSchedulerConfig:
			d.v = new(structs.SchedulerConfiguration)
		case recNodePool:
			d.v = new(structs.NodePool)
		case recDeployment:
			d.v = new(structs.Deployment)
		case recNodeQuarantine:
			d.v = new(structs.NodeQuarantine)
		case recPoolAutoscaler:
			d.v = new(structs.PoolAutoscaler)
		case recPoolInstance:
			d.v = new(structs.PoolInstance)
		case recPoolAutoscaleStatus:
			d.v = new(structs.PoolAutoscaleStatus)
		case recAlloc:
			if err := dec.Decode(&d.ref); err != nil {
				return nil, err
			}
			d.v = new(structs.Allocation)
		default:
			return nil, fmt.Errorf("record %d: unknown type %d", i+1, d.t)
		}
		if err := dec.Decode(d.v); err != nil {
			return nil, fmt.Errorf("record %d (type %d): %v", i+1, d.t, err)
		}
		if err := recordNulls(d.v); err != nil {
			return nil, fmt.Errorf("record %d (type %d): %v", i+1, d.t, err)
		}
	}
	if dec.NumBytesRead() != len(data) {
		return nil, fmt.Errorf("%d bytes after the last record", len(data)-dec.NumBytesRead())
	}
	return out, nil
}

// inserter loads decoded records into the new store, resolving
// allocations' job numbers.
type inserter struct {
	restore  *state.StateRestore
	jobs     []*structs.Job
	records  uint64
	expected uint64
}

func (in *inserter) insertAll(records []decoded) error {
	for _, d := range records {
		if d.t == recTotal {
			in.expected = d.ref
			continue
		}
		in.records++
		if err := in.insert(d); err != nil {
			return corrupt("record %d (type %d): %v", in.records, d.t, err)
		}
	}
	return nil
}

func (in *inserter) insert(d decoded) error {
	switch v := d.v.(type) {
	case *state.IndexEntry:
		return in.restore.IndexRestore(v)
	case *structs.Node:
		return in.restore.NodeRestore(v)
	case *structs.Job:
		if d.t == recJobVersion {
			return in.restore.JobVersionRestore(v)
		}
		in.jobs = append(in.jobs, v)
		if d.t == recJob {
			return in.restore.JobRestore(v)
		}
		return nil
	case *structs.JobSummary:
		return in.restore.JobSummaryRestore(v)
	case *structs.Evaluation:
		return in.restore.EvalRestore(v)
	case *structs.ACLPolicy:
		return in.restore.ACLPolicyRestore(v)
	case *structs.ACLToken:
		return in.restore.ACLTokenRestore(v)
	case *structs.ACLClusterSecret:
		return in.restore.ACLClusterSecretRestore(v)
	case *structs.VariableEncrypted:
		return in.restore.VariableRestore(v)
	case *structs.RootKeyMeta:
		return in.restore.RootKeyMetaRestore(v)
	case *structs.ServiceRegistration:
		return in.restore.ServiceRegistrationRestore(v)
	case *structs.JobScalingEvents:
		return in.restore.ScalingEventsRestore(v)
	case *structs.PeriodicLaunch:
		return in.restore.PeriodicLaunchRestore(v)
	case *structs.SchedulerConfiguration:
		return in.restore.SchedulerConfigRestore(v)
	case *structs.NodePool:
		return in.restore.NodePoolRestore(v)
	case *structs.Deployment:
		return in.restore.DeploymentRestore(v)
	case *structs.NodeQuarantine:
		return in.restore.NodeQuarantineRestore(v)
	case *structs.PoolAutoscaler:
		return in.restore.PoolAutoscalerRestore(v)
	case *structs.PoolInstance:
		return in.restore.PoolInstanceRestore(v)
	case *structs.PoolAutoscaleStatus:
		return in.restore.PoolAutoscaleStatusRestore(v)
	case *structs.Allocation:
		if d.ref > uint64(len(in.jobs)) {
			return fmt.Errorf("allocation refers to job %d of %d", d.ref, len(in.jobs))
		}
		if d.ref > 0 {
			v.Job = in.jobs[d.ref-1]
		}
		return in.restore.AllocRestore(v)
	}
	return fmt.Errorf("unexpected record %T", d.v)
}

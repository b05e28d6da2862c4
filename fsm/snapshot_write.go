package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackwrite"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Encoding is the expensive part of a snapshot, so WriteSnapshot hands
// chunks of rowsPerChunk records to one encoder per core and writes the
// resulting frames in order.
const rowsPerChunk = 512

// row is one record to write: its type, the job number of an allocation,
// and the object.
type row struct {
	t   byte
	ref uint64
	v   any
}

// chunk is a run of rows encoded by one worker into one or more complete
// frames. done is closed once buf (or err) is set.
type chunk struct {
	rows []row
	buf  *bytes.Buffer
	err  error
	done chan struct{}
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

// WriteSnapshot writes snap to out in the snapshot format. It is what
// Persist uses, and what an operator snapshot can use. snap is only read.
func WriteSnapshot(out io.Writer, snap *state.StateSnapshot) error {
	lastIndex, err := snap.LatestIndex()
	if err != nil {
		return err
	}
	rows, err := collectRows(snap)
	if err != nil {
		return fmt.Errorf("fsm: reading snapshot: %w", err)
	}
	cw := &crcWriter{w: out}
	var head bytes.Buffer
	hdr := snapshotHeader{Magic: snapshotMagic, FormatVersion: snapshotFormatVersion, LastIndex: lastIndex}
	if err := codec.NewEncoder(&head, structs.MsgpackHandle).Encode(&hdr); err != nil {
		return fmt.Errorf("fsm: encoding snapshot header: %w", err)
	}
	if _, err := cw.Write(head.Bytes()); err != nil {
		return fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	if err := encodeRows(cw, rows); err != nil {
		return fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	end := binary.BigEndian.AppendUint64(make([]byte, 4), uint64(len(rows)))
	if _, err := cw.Write(end); err != nil {
		return fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	var trailer [trailerLen]byte
	binary.BigEndian.PutUint32(trailer[:], cw.crc)
	if _, err := out.Write(trailer[:]); err != nil {
		return fmt.Errorf("fsm: writing snapshot checksum: %w", err)
	}
	return nil
}

// collectRows lists every record in stream order and numbers the jobs:
// the jobs table first (1..n), then, as recAllocJob records right after
// it, any other job object an allocation points at.
func collectRows(snap *state.StateSnapshot) ([]row, error) {
	indexes, err := snap.Indexes()
	if err != nil {
		return nil, err
	}
	nodes, err := snap.Nodes(nil)
	if err != nil {
		return nil, err
	}
	jobs, err := snap.Jobs(nil)
	if err != nil {
		return nil, err
	}
	sums, err := snap.JobSummaries(nil)
	if err != nil {
		return nil, err
	}
	evals, err := snap.Evals(nil)
	if err != nil {
		return nil, err
	}
	allocs, err := snap.Allocs(nil)
	if err != nil {
		return nil, err
	}
	rows := make([]row, 0, len(indexes)+len(nodes)+len(jobs)+len(sums)+len(evals)+len(allocs))
	for _, e := range indexes {
		rows = append(rows, row{t: recIndex, v: e})
	}
	for _, n := range nodes {
		rows = append(rows, row{t: recNode, v: n})
	}
	refs := make(map[*structs.Job]uint64, len(jobs))
	for _, j := range jobs {
		refs[j] = uint64(len(refs) + 1)
		rows = append(rows, row{t: recJob, v: j})
	}
	allocRefs := make([]uint64, len(allocs))
	for i, a := range allocs {
		if a.Job == nil {
			continue
		}
		ref, ok := refs[a.Job]
		if !ok {
			ref = uint64(len(refs) + 1)
			refs[a.Job] = ref
			rows = append(rows, row{t: recAllocJob, v: a.Job})
		}
		allocRefs[i] = ref
	}
	for _, js := range sums {
		rows = append(rows, row{t: recJobSummary, v: js})
	}
	for _, e := range evals {
		rows = append(rows, row{t: recEval, v: e})
	}
	for i, a := range allocs {
		rows = append(rows, row{t: recAlloc, ref: allocRefs[i], v: a})
	}
	versions, err := snap.JobVersions(nil)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		// The jobs table's objects are numbered 1..len(jobs); a version
		// row holding one of them is that job's current version, which
		// its recJob restores.
		if ref, ok := refs[v]; ok && ref <= uint64(len(jobs)) {
			continue
		}
		rows = append(rows, row{t: recJobVersion, v: v})
	}
	scaling, err := snap.ScalingEvents(nil)
	if err != nil {
		return nil, err
	}
	for _, e := range scaling {
		rows = append(rows, row{t: recScalingEvents, v: e})
	}
	return appendACLRows(snap, rows)
}

// appendACLRows adds the ACL policies, tokens (secret hashes only) and
// the cluster secret, then the service registrations and the periodic
// jobs' last launches.
func appendACLRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	policies, err := snap.ACLPolicies(nil, "")
	if err != nil {
		return nil, err
	}
	tokens, err := snap.ACLTokens(nil, "")
	if err != nil {
		return nil, err
	}
	secret, err := snap.ACLClusterSecret()
	if err != nil {
		return nil, err
	}
	for _, p := range policies {
		rows = append(rows, row{t: recACLPolicy, v: p})
	}
	for _, t := range tokens {
		rows = append(rows, row{t: recACLToken, v: t})
	}
	if secret != nil {
		rows = append(rows, row{t: recACLCluster, v: secret})
	}
	rows, err = appendVariableRows(snap, rows)
	if err != nil {
		return nil, err
	}
	if rows, err = appendServiceRows(snap, rows); err != nil {
		return nil, err
	}
	return appendPeriodicRows(snap, rows)
}

// appendVariableRows adds the variables (encrypted, as stored) and the
// root keys' metadata (never their material).
func appendVariableRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	vars, err := snap.Variables(nil, "*", "")
	if err != nil {
		return nil, err
	}
	keys, err := snap.RootKeyMetas(nil)
	if err != nil {
		return nil, err
	}
	for _, v := range vars {
		rows = append(rows, row{t: recVariable, v: v})
	}
	for _, k := range keys {
		rows = append(rows, row{t: recRootKeyMeta, v: k})
	}
	return rows, nil
}

// appendServiceRows adds the native service registrations.
func appendServiceRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	regs, err := snap.ServiceRegistrations(nil)
	if err != nil {
		return nil, err
	}
	for _, r := range regs {
		rows = append(rows, row{t: recServiceRegistration, v: r})
	}
	return rows, nil
}

// appendPeriodicRows adds the periodic jobs' last launches, then the
// deployments.
func appendPeriodicRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	launches, err := snap.PeriodicLaunches(nil)
	if err != nil {
		return nil, err
	}
	for _, l := range launches {
		rows = append(rows, row{t: recPeriodicLaunch, v: l})
	}
	return appendSchedulerConfigRow(snap, rows)
}

// appendSchedulerConfigRow adds the scheduler configuration, when an
// operator set one, and the stored node pools, then the deployments.
func appendSchedulerConfigRow(snap *state.StateSnapshot, rows []row) ([]row, error) {
	c, err := snap.StoredSchedulerConfig()
	if err != nil {
		return nil, err
	}
	if c != nil {
		rows = append(rows, row{t: recSchedulerConfig, v: c})
	}
	pools, err := snap.StoredNodePools(nil)
	if err != nil {
		return nil, err
	}
	for _, p := range pools {
		rows = append(rows, row{t: recNodePool, v: p})
	}
	return appendDeploymentRows(snap, rows)
}

// appendDeploymentRows adds the deployments, then the quarantine rows.
func appendDeploymentRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	deployments, err := snap.Deployments(nil)
	if err != nil {
		return nil, err
	}
	for _, d := range deployments {
		rows = append(rows, row{t: recDeployment, v: d})
	}
	return appendNodeQuarantineRows(snap, rows)
}

// appendNodeQuarantineRows adds the nodes' quarantine rows.
func appendNodeQuarantineRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	qs, err := snap.NodeQuarantines(nil)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		rows = append(rows, row{t: recNodeQuarantine, v: q})
	}
	return appendPoolAutoscaleRows(snap, rows)
}

// appendPoolAutoscaleRows adds the autoscaling node pools'
// configurations, instances and statuses.
func appendPoolAutoscaleRows(snap *state.StateSnapshot, rows []row) ([]row, error) {
	asgs, err := snap.PoolAutoscalers(nil)
	if err != nil {
		return nil, err
	}
	for _, a := range asgs {
		rows = append(rows, row{t: recPoolAutoscaler, v: a})
	}
	instances, err := snap.PoolInstances(nil, "")
	if err != nil {
		return nil, err
	}
	for _, i := range instances {
		rows = append(rows, row{t: recPoolInstance, v: i})
	}
	statuses, err := snap.PoolAutoscaleStatuses(nil)
	if err != nil {
		return nil, err
	}
	for _, s := range statuses {
		rows = append(rows, row{t: recPoolAutoscaleStatus, v: s})
	}
	return rows, nil
}

// encodeRows encodes rows in chunks on every core and writes the chunks to
// w in order. It returns the first error and leaves no goroutine behind.
func encodeRows(w io.Writer, rows []row) error {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *chunk, workers)
	ordered := make(chan *chunk, 2*workers)
	quit := make(chan struct{})
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	var wg sync.WaitGroup

	wg.Add(1)
	go func() { // producer: hands out chunks in stream order
		defer wg.Done()
		defer close(work)
		defer close(ordered)
		for start := 0; start < len(rows); start += rowsPerChunk {
			c := &chunk{rows: rows[start:min(start+rowsPerChunk, len(rows))], done: make(chan struct{})}
			// Every chunk the writer can see has been handed to a worker
			// first, so waiting on its done channel always ends.
			select {
			case work <- c:
			case <-quit:
				return
			}
			select {
			case ordered <- c:
			case <-quit:
				return
			}
		}
	}()
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var enc *codec.Encoder
			for c := range work {
				c.buf = bufs.Get().(*bytes.Buffer)
				c.buf.Reset()
				if enc == nil {
					enc = codec.NewEncoder(c.buf, structs.MsgpackHandle)
				}
				c.err = encodeChunk(enc, c)
				close(c.done)
			}
		}()
	}

	var err error
	for c := range ordered {
		<-c.done
		if err == nil {
			err = c.err
		}
		if err == nil {
			_, err = w.Write(c.buf.Bytes())
		}
		bufs.Put(c.buf)
		if err != nil {
			break
		}
	}
	if err != nil {
		close(quit) // the producer stops; workers finish what they hold
	}
	wg.Wait()
	return err
}

// encodeChunk encodes c.rows as frames into c.buf, starting a new frame
// whenever the current one passes frameTargetLen. Each frame's length and
// record count are written in fixed-width slots reserved up front and
// filled in once the frame is complete.
func encodeChunk(enc *codec.Encoder, c *chunk) error {
	enc.Reset(c.buf)
	var scratch [9]byte
	rows := c.rows
	for len(rows) > 0 {
		start := c.buf.Len()
		c.buf.Write(scratch[:frameHeaderLen])
		n := 0
		for n < len(rows) && (n == 0 || c.buf.Len()-start < frameTargetLen) {
			r := rows[n]
			c.buf.WriteByte(r.t)
			v := r.v
			if r.t == recAlloc {
				c.buf.Write(msgpackwrite.AppendUint(scratch[:0], r.ref))
				stripped := *r.v.(*structs.Allocation)
				stripped.Job = nil
				v = &stripped
			}
			if err := enc.Encode(v); err != nil {
				return err
			}
			n++
		}
		hdr := c.buf.Bytes()[start : start+frameHeaderLen]
		binary.BigEndian.PutUint32(hdr[0:4], uint32(c.buf.Len()-start-4))
		hdr[4] = 0xce // msgpack uint32: the record count
		binary.BigEndian.PutUint32(hdr[5:9], uint32(n))
		rows = rows[n:]
	}
	return nil
}

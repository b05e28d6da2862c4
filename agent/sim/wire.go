package sim

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/structs"
)

// The two answers every allocation costs a simulated node (the watch's
// Node.GetClientAllocs and the fetch's Alloc.GetAllocs) are read here
// field by field from their msgpack, not decoded into structs: a node
// needs a handful of an allocation's fields, not its job, resources and
// metrics, and only the IDs of the watch's map that changed. The bytes
// are the servers' usual answers; only the reading differs.

// rawReply is a reply kept as the msgpack bytes of the response body.
// With the simulator's own client (mux.go) body is a view into the pooled
// response buffer, handed over instead of decoded; with any other
// Transport (a codec-based client such as server/pool) the codec fills it
// with a copy, as a codec.Selfer. Call release when done with body.
type rawReply struct {
	body []byte
	buf  *[]byte // the pooled buffer body lies in; nil for a copy
}

// take hands r a response buffer and the body in it.
func (r *rawReply) take(buf *[]byte, body []byte) {
	r.release()
	r.buf, r.body = buf, body
}

// release gives the response buffer back; body is invalid afterwards.
func (r *rawReply) release() {
	if r.buf != nil {
		putResponseBuf(r.buf)
	}
	r.buf, r.body = nil, nil
}

// CodecEncodeSelf writes what the body holds (the codec writes no raw
// bytes with this handle; nothing but tests encodes a reply).
func (r *rawReply) CodecEncodeSelf(e *codec.Encoder) {
	var v any
	if len(r.body) > 0 {
		if err := structs.Decode(r.body, &v); err != nil {
			panic(err)
		}
	}
	e.MustEncode(v)
}

// CodecDecodeSelf keeps a copy of the next item's bytes.
func (r *rawReply) CodecDecodeSelf(d *codec.Decoder) {
	var raw codec.Raw
	d.MustDecode(&raw)
	r.release()
	r.body = raw
}

// readResponseHeader reads a net/rpc response header (rpc.Response:
// ServiceMethod, Seq, Error).
func readResponseHeader(r *msgReader) (seq uint64, errMsg string) {
	for n := r.mapLen(); n > 0 && r.err == nil; n-- {
		switch k := r.str(); {
		case string(k) == "Seq":
			seq = r.uint()
		case string(k) == "Error":
			if s := r.str(); len(s) > 0 {
				errMsg = string(s)
			}
		default:
			r.skip()
		}
	}
	return seq, errMsg
}

// clientAllocs is a Node.GetClientAllocs answer
// (structs.NodeClientAllocsResponse): its index, and its Allocs map
// (allocation ID -> AllocModifyIndex) still encoded.
type clientAllocs struct {
	index  uint64
	allocs []byte // the encoded map; nil when absent or nil
	count  int    // its entries
}

// readClientAllocs reads the answer's index and finds its map (checking
// that the map is whole, not what it holds; see clientAllocsIter).
func readClientAllocs(body []byte) (clientAllocs, error) {
	var out clientAllocs
	r := newMsgReader(body)
	for n := r.mapLen(); n > 0 && r.err == nil; n-- {
		switch k := r.str(); {
		case string(k) == "Index":
			out.index = r.uint()
		case string(k) == "Allocs":
			out.allocs = r.raw()
		default:
			r.skip()
		}
	}
	if out.allocs != nil {
		m := newMsgReader(out.allocs)
		out.count = m.mapLen()
		if m.err != nil {
			r.fail(m.err)
		}
	}
	if r.err != nil {
		return clientAllocs{}, fmt.Errorf("reading Node.GetClientAllocs: %w", r.err)
	}
	return out, nil
}

// iter walks the entries of the map.
func (c *clientAllocs) iter() clientAllocsIter {
	it := clientAllocsIter{r: newMsgReader(c.allocs)}
	if c.allocs != nil {
		it.left = it.r.mapLen()
	}
	return it
}

// clientAllocsIter walks a clientAllocs map: after next returns true, id
// (a view into the answer) and index hold an entry. err says why next
// stopped early.
type clientAllocsIter struct {
	r     msgReader
	left  int
	id    []byte
	index uint64
}

func (it *clientAllocsIter) next() bool {
	if it.left <= 0 || it.r.err != nil {
		return false
	}
	it.left--
	it.id = it.r.str()
	it.index = it.r.uint()
	return it.r.err == nil
}

func (it *clientAllocsIter) err() error { return it.r.err }

// wireAlloc is what a simulated node reads of an allocation fetched with
// Alloc.GetAllocs. The byte slices are views into the answer: valid until
// its rawReply is released.
type wireAlloc struct {
	id, namespace, nodeID, jobID, taskGroup []byte
	desiredStatus, clientStatus             []byte
	allocModifyIndex                        uint64
	// job is the allocation's Job, still encoded (nil when it has none):
	// it is decoded only when the simulator has not yet seen the job
	// version (jobModifyIndex) and task group (see groupCache).
	job            []byte
	jobModifyIndex uint64
}

// serverTerminal is structs.Allocation.ServerTerminalStatus.
func (a *wireAlloc) serverTerminal() bool {
	return string(a.desiredStatus) == structs.AllocDesiredStatusStop ||
		string(a.desiredStatus) == structs.AllocDesiredStatusEvict
}

// clientTerminal is structs.Allocation.ClientTerminalStatus.
func (a *wireAlloc) clientTerminal() bool {
	switch string(a.clientStatus) {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return false
}

// readAllocs reads the allocations of an Alloc.GetAllocs answer
// (structs.AllocsGetResponse).
func readAllocs(body []byte) ([]wireAlloc, error) {
	var out []wireAlloc
	r := newMsgReader(body)
	for n := r.mapLen(); n > 0 && r.err == nil; n-- {
		if k := r.str(); string(k) != "Allocs" {
			r.skip()
			continue
		}
		count := r.arrayLen()
		if r.err != nil {
			break
		}
		out = make([]wireAlloc, 0, min(count, len(body)))
		var last lastJob
		for range count {
			if r.skipNil() {
				return nil, fmt.Errorf("reading Alloc.GetAllocs: a nil allocation")
			}
			out = append(out, readAlloc(&r, &last))
			if r.err != nil {
				break
			}
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("reading Alloc.GetAllocs: %w", r.err)
	}
	return out, nil
}

// lastJob is the last job an answer's allocations carried. Allocations of
// one job version carry the same bytes (unless a map in the job has
// several entries, encoded in random order): comparing is much cheaper
// than walking them, and a msgpack item is never a prefix of another, so
// equal bytes are the same job.
type lastJob struct {
	job         []byte
	modifyIndex uint64
}

// readAlloc reads one encoded structs.Allocation (a map by field name;
// fields left out are zero).
func readAlloc(r *msgReader, last *lastJob) wireAlloc {
	var a wireAlloc
	for n := r.mapLen(); n > 0 && r.err == nil; n-- {
		switch k := r.str(); {
		case string(k) == "ID":
			a.id = r.str()
		case string(k) == "Namespace":
			a.namespace = r.str()
		case string(k) == "NodeID":
			a.nodeID = r.str()
		case string(k) == "JobID":
			a.jobID = r.str()
		case string(k) == "TaskGroup":
			a.taskGroup = r.str()
		case string(k) == "DesiredStatus":
			a.desiredStatus = r.str()
		case string(k) == "ClientStatus":
			a.clientStatus = r.str()
		case string(k) == "AllocModifyIndex":
			a.allocModifyIndex = r.uint()
		case string(k) == "Job":
			switch {
			case r.skipNil():
			case last.job != nil && r.err == nil && bytes.HasPrefix(r.b[r.pos:], last.job):
				a.job, a.jobModifyIndex = r.take(len(last.job)), last.modifyIndex
			default:
				start := r.pos
				a.jobModifyIndex = readJobModifyIndex(r)
				if r.err == nil {
					a.job = r.b[start:r.pos:r.pos]
					*last = lastJob{job: a.job, modifyIndex: a.jobModifyIndex}
				}
			}
		default:
			r.skip()
		}
	}
	return a
}

// readJobModifyIndex steps over an encoded structs.Job, reading its
// JobModifyIndex.
func readJobModifyIndex(r *msgReader) uint64 {
	var idx uint64
	for n := r.mapLen(); n > 0 && r.err == nil; n-- {
		if k := r.str(); string(k) == "JobModifyIndex" {
			idx = r.uint()
		} else {
			r.skip()
		}
	}
	return idx
}

package sim

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackread"
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

// clientAllocs is a Node.GetClientAllocs answer
// (structs.NodeClientAllocsResponse): its index, its Allocs map
// (allocation ID -> AllocModifyIndex) still encoded, and the allocations
// it carries (Changed, asked for with InlineAllocs), read as a fetch's.
type clientAllocs struct {
	index   uint64
	allocs  []byte // the encoded map; nil when absent or nil
	count   int    // its entries
	changed []wireAlloc
}

// readClientAllocs reads the answer's index and finds its map (checking
// that the map is whole, not what it holds; see clientAllocsIter).
func readClientAllocs(body []byte) (clientAllocs, error) {
	var out clientAllocs
	r := msgpackread.NewReader(body)
	for n := r.MapLen(); n > 0 && r.Err() == nil; n-- {
		switch k := r.Str(); {
		case string(k) == "Index":
			out.index = r.Uint()
		case string(k) == "Allocs":
			out.allocs = r.Raw()
		case string(k) == "Changed":
			out.changed = readAllocList(&r, out.changed[:0])
		default:
			r.Skip()
		}
	}
	if out.allocs != nil {
		m := msgpackread.NewReader(out.allocs)
		out.count = m.MapLen()
		if m.Err() != nil {
			r.Fail(m.Err())
		}
	}
	if r.Err() != nil {
		return clientAllocs{}, fmt.Errorf("reading Node.GetClientAllocs: %w", r.Err())
	}
	return out, nil
}

// iter walks the entries of the map.
func (c *clientAllocs) iter() clientAllocsIter {
	it := clientAllocsIter{r: msgpackread.NewReader(c.allocs)}
	if c.allocs != nil {
		it.left = it.r.MapLen()
	}
	return it
}

// clientAllocsIter walks a clientAllocs map: after next returns true, id
// (a view into the answer) and index hold an entry. err says why next
// stopped early.
type clientAllocsIter struct {
	r     msgpackread.Reader
	left  int
	id    []byte
	index uint64
}

func (it *clientAllocsIter) next() bool {
	if it.left <= 0 || it.r.Err() != nil {
		return false
	}
	it.left--
	it.id = it.r.Str()
	it.index = it.r.Uint()
	return it.r.Err() == nil
}

func (it *clientAllocsIter) err() error { return it.r.Err() }

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
	r := msgpackread.NewReader(body)
	for n := r.MapLen(); n > 0 && r.Err() == nil; n-- {
		if k := r.Str(); string(k) != "Allocs" {
			r.Skip()
			continue
		}
		out = readAllocList(&r, nil)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("reading Alloc.GetAllocs: %w", r.Err())
	}
	return out, nil
}

// readAllocList appends to out the allocations of an encoded list (nil
// reads as none); a nil allocation fails r.
func readAllocList(r *msgpackread.Reader, out []wireAlloc) []wireAlloc {
	if r.SkipNil() {
		return out
	}
	count := r.ArrayLen()
	if r.Err() != nil {
		return out
	}
	if out == nil {
		out = make([]wireAlloc, 0, min(count, len(r.Rest())))
	}
	var last lastJob
	for range count {
		if r.SkipNil() {
			r.Fail(errors.New("a nil allocation"))
			return out
		}
		out = append(out, readAlloc(r, &last))
		if r.Err() != nil {
			break
		}
	}
	return out
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
func readAlloc(r *msgpackread.Reader, last *lastJob) wireAlloc {
	var a wireAlloc
	for n := r.MapLen(); n > 0 && r.Err() == nil; n-- {
		switch k := r.Str(); {
		case string(k) == "ID":
			a.id = r.Str()
		case string(k) == "Namespace":
			a.namespace = r.Str()
		case string(k) == "NodeID":
			a.nodeID = r.Str()
		case string(k) == "JobID":
			a.jobID = r.Str()
		case string(k) == "TaskGroup":
			a.taskGroup = r.Str()
		case string(k) == "DesiredStatus":
			a.desiredStatus = r.Str()
		case string(k) == "ClientStatus":
			a.clientStatus = r.Str()
		case string(k) == "AllocModifyIndex":
			a.allocModifyIndex = r.Uint()
		case string(k) == "Job":
			switch {
			case r.SkipNil():
			case last.job != nil && bytes.HasPrefix(r.Rest(), last.job):
				a.job, a.jobModifyIndex = r.Take(len(last.job)), last.modifyIndex
			default:
				start := r.Pos()
				a.jobModifyIndex = readJobModifyIndex(r)
				if r.Err() == nil {
					a.job = r.Since(start)
					*last = lastJob{job: a.job, modifyIndex: a.jobModifyIndex}
				}
			}
		default:
			r.Skip()
		}
	}
	return a
}

// readJobModifyIndex steps over an encoded structs.Job, reading its
// JobModifyIndex.
func readJobModifyIndex(r *msgpackread.Reader) uint64 {
	var idx uint64
	for n := r.MapLen(); n > 0 && r.Err() == nil; n-- {
		if k := r.Str(); string(k) == "JobModifyIndex" {
			idx = r.Uint()
		} else {
			r.Skip()
		}
	}
	return idx
}

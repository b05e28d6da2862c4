package structs

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// AllocIndex is one allocation of a node and its AllocModifyIndex.
type AllocIndex struct {
	ID               string
	AllocModifyIndex uint64
}

// AllocIndexes lists a node's allocations with their AllocModifyIndex,
// sorted by ID, each ID once: what a client's watch (Node.GetClientAllocs)
// answers. On the wire it is a msgpack map from ID to index, as the
// map[string]uint64 it replaced was, so old and new clients and servers
// read each other.
//
// It is a sorted slice, not a map, because the servers keep every node's
// list sorted already (state's node rows) and answer thousands of watches
// a second from it: an answer shares the row's array, and encoding it
// builds nothing. Values a server hands out may share their array with
// the state store: never modify one in place.
type AllocIndexes []AllocIndex

// NewAllocIndexes lists m sorted by ID (nil for a nil map).
func NewAllocIndexes(m map[string]uint64) AllocIndexes {
	if m == nil {
		return nil
	}
	out := make(AllocIndexes, 0, len(m))
	for id, idx := range m {
		out = append(out, AllocIndex{ID: id, AllocModifyIndex: idx})
	}
	out.Sort()
	return out
}

func compareAllocIndex(a, b AllocIndex) int { return cmp.Compare(a.ID, b.ID) }

// Sort sorts x by ID, in place: for a list being built, never for one
// handed out.
func (x AllocIndexes) Sort() { slices.SortFunc(x, compareAllocIndex) }

// Search returns the position of allocation id in x, or where it would
// go, and whether x lists it.
func (x AllocIndexes) Search(id string) (int, bool) {
	return slices.BinarySearchFunc(x, id, func(a AllocIndex, id string) int { return cmp.Compare(a.ID, id) })
}

// Get returns the AllocModifyIndex of allocation id and whether x lists it.
func (x AllocIndexes) Get(id string) (uint64, bool) {
	i, ok := x.Search(id)
	if !ok {
		return 0, false
	}
	return x[i].AllocModifyIndex, true
}

// Map returns x as a new map.
func (x AllocIndexes) Map() map[string]uint64 {
	m := make(map[string]uint64, len(x))
	for _, a := range x {
		m[a.ID] = a.AllocModifyIndex
	}
	return m
}

// CodecEncodeSelf writes x as a msgpack map (nil for a nil list). It
// drives the encoder through codec.GenHelperEncoder, the interface the
// generated code of this package uses, pinned with it by go.mod.
func (x AllocIndexes) CodecEncodeSelf(e *codec.Encoder) {
	if x == nil {
		e.MustEncode(nil)
		return
	}
	_, w := codec.GenHelperEncoder(e)
	w.WriteMapStart(len(x))
	for _, a := range x {
		w.WriteMapElemKey()
		w.EncodeSymbol(a.ID)
		w.WriteMapElemValue()
		w.EncodeUint(a.AllocModifyIndex)
	}
	w.WriteMapEnd()
}

// CodecDecodeSelf reads a msgpack map of ID to index (or nil), in any
// key order, into a sorted list. A repeated ID is an error.
func (x *AllocIndexes) CodecDecodeSelf(d *codec.Decoder) {
	_, r := codec.GenHelperDecoder(d)
	if r.TryDecodeAsNil() {
		*x = nil
		return
	}
	n := r.ReadMapStart()
	out := make(AllocIndexes, 0, max(0, min(n, 1<<16)))
	sorted := true
	for i := 0; n < 0 && !r.CheckBreak() || i < n; i++ {
		r.ReadMapElemKey()
		id := r.DecodeString()
		r.ReadMapElemValue()
		idx := r.DecodeUint64()
		if len(out) > 0 && id <= out[len(out)-1].ID {
			sorted = false
		}
		out = append(out, AllocIndex{ID: id, AllocModifyIndex: idx})
	}
	r.ReadMapEnd()
	if !sorted {
		out.Sort()
		for i := 1; i < len(out); i++ {
			if out[i].ID == out[i-1].ID {
				panic(fmt.Errorf("allocation indexes: allocation %q listed twice", out[i].ID))
			}
		}
	}
	*x = out
}

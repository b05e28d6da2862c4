package structs

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// An AllocIndexes is, on the wire, the map[string]uint64 it replaced:
// encoded, the same bytes as the map with sorted keys; decoded, any
// encoding of the map in any key order gives the sorted list.
func TestAllocIndexesWireFormat(t *testing.T) {
	m := map[string]uint64{"c": 3, "a": 1 << 40, "b": 0, "e": 200, "d": 70000}
	x := NewAllocIndexes(m)
	if !slices.IsSortedFunc(x, compareAllocIndex) || !maps.Equal(x.Map(), m) {
		t.Fatalf("NewAllocIndexes(%v) = %v", m, x)
	}
	type wireMap struct{ Allocs map[string]uint64 }
	type wireList struct{ Allocs AllocIndexes }
	var want, got []byte
	if err := codec.NewEncoderBytes(&want, newMsgpackHandle(true)).Encode(wireMap{m}); err != nil {
		t.Fatal(err)
	}
	if err := codec.NewEncoderBytes(&got, MsgpackHandle).Encode(wireList{x}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from the map's:\n got %x\nwant %x", got, want)
	}
	for range 5 { // map order is random: unsorted encodings
		var enc []byte
		if err := codec.NewEncoderBytes(&enc, MsgpackHandle).Encode(wireMap{m}); err != nil {
			t.Fatal(err)
		}
		var back wireList
		if err := Decode(enc, &back); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.Allocs, x) {
			t.Fatalf("decoded %v, want %v", back.Allocs, x)
		}
	}

	// nil stays nil and empty stays empty, as for the map.
	for _, tc := range []struct {
		in      AllocIndexes
		wantNil bool
	}{{nil, true}, {AllocIndexes{}, false}} {
		var back wireList
		if err := Decode(mustEncode(t, wireList{tc.in}), &back); err != nil {
			t.Fatal(err)
		}
		if (back.Allocs == nil) != tc.wantNil || len(back.Allocs) != 0 {
			t.Fatalf("%#v came back as %#v", tc.in, back.Allocs)
		}
	}
}

func TestAllocIndexesDecodeRejectsRepeatedIDs(t *testing.T) {
	// A msgpack map with key "a" twice: {"a": 1, "b": 2, "a": 3}.
	enc := []byte{0x81, 0xa6, 'A', 'l', 'l', 'o', 'c', 's', 0x83, 0xa1, 'a', 0x01, 0xa1, 'b', 0x02, 0xa1, 'a', 0x03}
	var back struct{ Allocs AllocIndexes }
	if err := Decode(enc, &back); err == nil {
		t.Fatalf("decoded %v, want an error", back.Allocs)
	}
	var wrong struct{ Allocs AllocIndexes }
	if err := Decode([]byte{0x81, 0xa6, 'A', 'l', 'l', 'o', 'c', 's', 0x91, 0x01}, &wrong); err == nil {
		t.Fatalf("an array decoded as %v, want an error", wrong.Allocs)
	}
}

func TestAllocIndexesGet(t *testing.T) {
	x := NewAllocIndexes(map[string]uint64{"b": 2, "d": 4, "f": 6})
	for _, tc := range []struct {
		id   string
		want uint64
		ok   bool
	}{{"a", 0, false}, {"b", 2, true}, {"c", 0, false}, {"d", 4, true}, {"f", 6, true}, {"g", 0, false}} {
		if got, ok := x.Get(tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("Get(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := AllocIndexes(nil).Get("a"); ok {
		t.Error("a nil list lists a")
	}
}

func mustEncode(t *testing.T, v any) []byte {
	t.Helper()
	var b []byte
	if err := codec.NewEncoderBytes(&b, MsgpackHandle).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b
}

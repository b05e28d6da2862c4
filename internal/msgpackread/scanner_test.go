package msgpackread

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/structs"
)

// encodeAll encodes values one after another with the RPC handle.
func encodeAll(t testing.TB, values ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encode %T: %v", v, err)
		}
	}
	return buf.Bytes()
}

func TestScannerFindsTheEnd(t *testing.T) {
	bigMap := map[string]int{}
	for i := range 70000 {
		bigMap[string(rune('a'+i%26))+strings.Repeat("x", i%7)+string(rune(i))] = i
	}
	cases := []struct {
		name   string
		values []any
	}{
		{"small ints", []any{1, -1}},
		{"wide ints and floats", []any{[]any{int64(-1 << 40), uint64(1 << 63), int8(-100), 300, -300, 70000, -70000, 3.5, float32(1.5)}, nil}},
		{"strings of every length class", []any{[]string{"", strings.Repeat("s", 31), strings.Repeat("s", 32), strings.Repeat("s", 255), strings.Repeat("s", 256), strings.Repeat("s", 70000)}, true}},
		{"bytes", []any{[]byte("raw"), bytes.Repeat([]byte{0xc1}, 70000)}},
		{"nested maps and arrays", []any{map[string]any{"a": []any{map[string]any{"b": []int{1, 2, 3}}, nil, false}, "c": map[string]any{}}, []any{}}},
		{"long array and map", []any{make([]int, 70000), bigMap}},
		{"time", []any{time.Unix(1700000000, 123), time.Time{}}},
		{"rpc response and an allocation", []any{
			map[string]any{"ServiceMethod": "Alloc.GetAllocs", "Seq": 7, "Error": ""},
			&structs.Allocation{ID: "a", Job: &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{{Name: "t", Config: map[string]any{"run_for": "1h", "n": 3}}}}}}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeAll(t, tc.values...)
			// Every strict prefix is incomplete, fed at once or in steps.
			step := max(1, len(b)/300)
			for n := 0; n < len(b); n += step {
				var s Scanner
				s.Reset(len(tc.values))
				if done, err := s.Scan(b[:n]); done || err != nil {
					t.Fatalf("prefix of %d of %d bytes: done %v, err %v", n, len(b), done, err)
				}
			}
			var s Scanner
			s.Reset(len(tc.values))
			for n := 1; n <= len(b); n = min(len(b), n+max(1, n/3)) {
				done, err := s.Scan(b[:n])
				if err != nil {
					t.Fatal(err)
				}
				if done != (n == len(b)) {
					t.Fatalf("after %d of %d bytes: done %v", n, len(b), done)
				}
				if n == len(b) {
					break
				}
			}
			if s.pos != len(b) {
				t.Fatalf("ends at %d, want %d", s.pos, len(b))
			}
			// Trailing bytes are not part of the objects.
			s.Reset(len(tc.values))
			if done, _ := s.Scan(append(b[:len(b):len(b)], 0x01, 0x02)); !done || s.pos != len(b) {
				t.Fatalf("with trailing bytes: done %v at %d, want %d", done, s.pos, len(b))
			}
		})
	}
}

func TestScannerRejectsTheUnusedByte(t *testing.T) {
	var s Scanner
	s.Reset(1)
	if _, err := s.Scan([]byte{0x91, 0xc1}); err != ErrMalformed {
		t.Fatalf("err %v, want ErrMalformed", err)
	}
}

// TestScannerEveryFormat walks hand-made items of the formats the
// handle does not write (str8, the ext family, 32-bit containers).
func TestScannerEveryFormat(t *testing.T) {
	items := [][]byte{
		{0xd4, 0x01, 0x00},
		append([]byte{0xd8, 0x01}, make([]byte, 16)...),
		{0xc7, 0x03, 0x01, 0xaa, 0xbb, 0xcc},
		{0xc8, 0x00, 0x02, 0x01, 0xaa, 0xbb},
		{0xc9, 0x00, 0x00, 0x00, 0x01, 0x05, 0xaa},
		{0xd9, 0x02, 'h', 'i'},
		{0xc5, 0x00, 0x01, 0xff},
		{0xdf, 0x00, 0x00, 0x00, 0x01, 0xa1, 'k', 0xc0},
		{0xdd, 0x00, 0x00, 0x00, 0x01, 0xc3},
		{0xde, 0x00, 0x01, 0xcc, 0x01, 0xd0, 0xff},
		{0xdc, 0x00, 0x02, 0xcd, 0x01, 0x00, 0xd1, 0xff, 0x00},
		{0xca, 0, 0, 0, 0},
		{0xcb, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	for _, item := range items {
		for n := range item {
			var s Scanner
			s.Reset(1)
			if done, err := s.Scan(item[:n]); done || err != nil {
				t.Fatalf("% x: prefix of %d: done %v, err %v", item, n, done, err)
			}
		}
		var s Scanner
		s.Reset(1)
		if done, err := s.Scan(item); !done || err != nil || s.pos != len(item) {
			t.Fatalf("% x: done %v err %v at %d", item, done, err, s.pos)
		}
	}
}

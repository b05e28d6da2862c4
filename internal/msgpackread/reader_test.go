package msgpackread

import (
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	t.Run("unsigned integers of every width", func(t *testing.T) {
		values := []any{0, 127, 128, 255, 256, 65535, 65536, uint64(1<<32 - 1), uint64(1 << 32), uint64(1<<64 - 1),
			int8(5), int16(300), int32(70000), int64(1 << 40), nil}
		want := []uint64{0, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1, 5, 300, 70000, 1 << 40, 0}
		r := NewReader(encodeAll(t, values...))
		for i, w := range want {
			if got := r.Uint(); got != w || r.err != nil {
				t.Fatalf("value %d: %d (%v), want %d", i, got, r.err, w)
			}
		}
	})
	t.Run("negative integers are refused", func(t *testing.T) {
		for _, v := range []any{-1, int8(-100), int16(-300), int32(-70000), int64(-1 << 40)} {
			r := NewReader(encodeAll(t, v))
			if got := r.Uint(); r.err == nil {
				t.Fatalf("%v read as %d", v, got)
			}
		}
	})
	t.Run("strings and bytes of every length class", func(t *testing.T) {
		for _, n := range []int{0, 31, 32, 255, 256, 65535, 65536} {
			s := strings.Repeat("s", n)
			r := NewReader(encodeAll(t, s, []byte(s), "end"))
			if a, b, end := r.Str(), r.Str(), r.Str(); string(a) != s || string(b) != s || string(end) != "end" || r.err != nil {
				t.Fatalf("length %d: read %d, %d bytes and %q (%v)", n, len(a), len(b), end, r.err)
			}
		}
	})
	t.Run("containers and skipping", func(t *testing.T) {
		r := NewReader(encodeAll(t, make([]int, 70000), map[string]any{"a": []any{1, "x", map[string]int{"b": 2}}}, nil, nil, "end"))
		if n := r.ArrayLen(); n != 70000 {
			t.Fatalf("array of %d", n)
		}
		for range 70000 {
			r.Skip()
		}
		if n := r.MapLen(); n != 1 || string(r.Str()) != "a" {
			t.Fatalf("map of %d", n)
		}
		if raw := r.Raw(); len(raw) == 0 || r.err != nil {
			t.Fatalf("raw %x: %v", raw, r.err)
		}
		if r.MapLen() != 0 || r.ArrayLen() != 0 || string(r.Str()) != "end" || r.err != nil || r.pos != len(r.b) {
			t.Fatalf("at %d of %d: %v", r.pos, len(r.b), r.err)
		}
		if r.Skip(); r.err == nil {
			t.Fatal("skipped past the end")
		}
	})
	t.Run("the first error sticks", func(t *testing.T) {
		r := NewReader(encodeAll(t, "x", 1))
		r.MapLen()
		first := r.err
		if first == nil || r.Uint() != 0 || string(r.Str()) != "" || r.err != first {
			t.Fatalf("errors %v then %v", first, r.err)
		}
	})
}

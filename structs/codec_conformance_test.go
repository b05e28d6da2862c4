package structs

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackread"
)

// conformanceRounds is how many random values of each wire type the
// conformance tests encode.
func conformanceRounds() int {
	if testing.Short() {
		return 2
	}
	return 5
}

// TestConformanceMsgpackReadersAgainstCodec holds the hand-written msgpack
// readers (internal/msgpackread: the Scanner that frames RPC messages,
// the Reader that steps over and through them) to go-msgpack's decoder
// on random values of every wire type, as the generated code writes them:
// each item ends where go-msgpack's decoder stops reading (the next item
// decodes after it), every truncated prefix is incomplete to the Scanner
// and an error to the Reader, go-msgpack and the generated decoders, and
// corrupted bytes give errors or values, never a panic.
func TestConformanceMsgpackReadersAgainstCodec(t *testing.T) {
	for _, proto := range wireTypes {
		typ := reflect.TypeOf(proto).Elem()
		t.Run(typ.Name(), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(len(typ.Name())) * 31))
			for round := range conformanceRounds() {
				in := reflect.New(typ)
				fillRandom(r, in.Elem(), 0, false)
				enc := encodeWith(t, MsgpackHandle, in.Interface())
				checkFraming(t, typ, enc, round)
				checkTruncated(t, typ, enc, round, r)
				checkCorrupted(t, typ, enc, round, r)
			}
		})
	}
}

func encodeWith(t *testing.T, h *codec.MsgpackHandle, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, h).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkFraming: the item, followed by a marker, is framed by the Scanner,
// skipped by the Reader and decoded by go-msgpack's generic decoder to the
// same end.
func checkFraming(t *testing.T, typ reflect.Type, enc []byte, round int) {
	t.Helper()
	const marker = "end-of-item"
	stream := append(enc[:len(enc):len(enc)], encodeWith(t, MsgpackHandle, marker)...)

	dec := codec.NewDecoderBytes(stream, MsgpackHandle)
	var generic any
	var after string
	if err := dec.Decode(&generic); err != nil {
		t.Fatalf("round %d: go-msgpack decodes %s generically: %v", round, typ, err)
	}
	if err := dec.Decode(&after); err != nil || after != marker {
		t.Fatalf("round %d: go-msgpack read past the item: %q, %v", round, after, err)
	}

	var s msgpackread.Scanner
	s.Reset(1)
	if done, err := s.Scan(stream); !done || err != nil || s.End() != len(enc) {
		t.Fatalf("round %d: Scanner done %v, err %v, end %d; the item is %d bytes", round, done, err, s.End(), len(enc))
	}
	s.Reset(2)
	if done, err := s.Scan(stream); !done || err != nil || s.End() != len(stream) {
		t.Fatalf("round %d: Scanner of two items: done %v, err %v, end %d of %d", round, done, err, s.End(), len(stream))
	}

	rd := msgpackread.NewReader(stream)
	rd.Skip()
	if rd.Pos() != len(enc) || rd.Err() != nil {
		t.Fatalf("round %d: Reader.Skip ends at %d (%v); the item is %d bytes", round, rd.Pos(), rd.Err(), len(enc))
	}
	if got := string(rd.Str()); got != marker || rd.Err() != nil {
		t.Fatalf("round %d: Reader read %q after the item (%v)", round, got, rd.Err())
	}
	rd = msgpackread.NewReader(stream)
	if raw := rd.Raw(); !bytes.Equal(raw, enc) {
		t.Fatalf("round %d: Reader.Raw is %d bytes, the item %d", round, len(raw), len(enc))
	}
}

// checkTruncated: strict prefixes (the shortest, the longest and 20
// others) is incomplete to the Scanner, an error to the Reader, to
// go-msgpack's generic decoder and to the type's generated decoder.
func checkTruncated(t *testing.T, typ reflect.Type, enc []byte, round int, r *rand.Rand) {
	t.Helper()
	cuts := []int{0, 1, len(enc) - 1}
	for range 20 {
		cuts = append(cuts, r.Intn(len(enc)))
	}
	for _, n := range cuts {
		if n < 0 || n >= len(enc) {
			continue
		}
		b := enc[:n:n]
		var s msgpackread.Scanner
		s.Reset(1)
		if done, err := s.Scan(b); done || err != nil {
			t.Fatalf("round %d: a prefix of %d of %d bytes: Scanner done %v, err %v", round, n, len(enc), done, err)
		}
		rd := msgpackread.NewReader(b)
		if rd.Skip(); rd.Err() == nil {
			t.Fatalf("round %d: a prefix of %d of %d bytes skipped without error", round, n, len(enc))
		}
		var generic any
		if err := decodeNoPanic(t, b, &generic); err == nil {
			t.Fatalf("round %d: go-msgpack decodes a prefix of %d of %d bytes", round, n, len(enc))
		}
		if err := decodeNoPanic(t, b, reflect.New(typ).Interface()); err == nil {
			t.Fatalf("round %d: the generated decoder of %s decodes a prefix of %d of %d bytes", round, typ, n, len(enc))
		}
	}
}

// checkCorrupted flips, replaces and inserts random bytes: the readers
// and decoders may fail or succeed, but must not panic. Length prefixes
// made huge must not make a decoder allocate what the input cannot hold.
func checkCorrupted(t *testing.T, typ reflect.Type, enc []byte, round int, r *rand.Rand) {
	t.Helper()
	special := []byte{0xc1, 0xdc, 0xdd, 0xde, 0xdf, 0xdb, 0xc6, 0xc0, 0xff, 0x00}
	for range 16 {
		b := bytes.Clone(enc)
		for range 1 + r.Intn(3) {
			i := r.Intn(len(b))
			switch r.Intn(3) {
			case 0:
				b[i] ^= 1 << r.Intn(8)
			case 1:
				b[i] = special[r.Intn(len(special))]
			default:
				b = append(b[:i:i], append([]byte{special[r.Intn(len(special))], 0xff, 0xff}, b[i:]...)...)
			}
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("round %d: a reader panics on corrupted input % x: %v", round, b, p)
				}
			}()
			var s msgpackread.Scanner
			s.Reset(1)
			_, _ = s.Scan(b)
			rd := msgpackread.NewReader(b)
			rd.Skip()
		}()
		var generic any
		_ = decodeNoPanic(t, b, &generic)
		_ = decodeNoPanic(t, b, reflect.New(typ).Interface())
	}
}

// decodeNoPanic decodes b into out with Decode (the servers' decoder),
// failing the test on a panic.
func decodeNoPanic(t *testing.T, b []byte, out any) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("decoding % x into %T panics: %v", b[:min(len(b), 64)], out, p)
		}
	}()
	return Decode(b, out)
}

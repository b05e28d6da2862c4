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

// TestConformanceGeneratedCodecAgainstReflection holds the generated
// encoders and decoders (structs.generated.go, codecgen) to go-msgpack's
// reflection codec, which they replaced and which servers of earlier
// versions used: random values of every wire type are encoded by the
// generated code and, as a copy in types without generated methods (the
// same fields, tags and embedding), by reflection (a recursive type,
// which reflect.StructOf cannot copy, keeps its generated code: the job
// diffs' ObjectDiff). The encodings have the same length and, with map
// entries in key order, the same bytes; each side's decoder reads the
// other's bytes back to the same values. TaskStates and AllocIndexes keep their hand-written
// codecs (tested in their own files) on both sides.
func TestConformanceGeneratedCodecAgainstReflection(t *testing.T) {
	canonical := newMsgpackHandle(true)
	// sorted re-encodes an encoding through generic values with map keys
	// sorted: what a decoder sees, whatever the order of map entries
	// (which go-msgpack does not fix outside canonical mode, and which in
	// canonical mode it sorts for reflection's struct fields but not for
	// the generated code's).
	sorted := func(t *testing.T, b []byte) []byte {
		t.Helper()
		var v any
		if err := codec.NewDecoderBytes(b, MsgpackHandle).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return encodeWith(t, canonical, v)
	}
	sh := newShadows()
	for _, proto := range wireTypes {
		typ := reflect.TypeOf(proto).Elem()
		t.Run(typ.Name(), func(t *testing.T) {
			st := sh.typeOf(typ)
			if _, self := reflect.New(st).Interface().(codec.Selfer); self && st != typ {
				t.Fatalf("the copy of %s has codec methods", typ)
			}
			r := rand.New(rand.NewSource(int64(len(typ.Name())) * 17))
			for round := range 2 * conformanceRounds() {
				in := reflect.New(typ)
				fillRandom(r, in.Elem(), 0, false)
				shadow := reflect.New(st)
				sh.copy(shadow.Elem(), in.Elem())
				generated := encodeWith(t, MsgpackHandle, in.Interface())
				reflected := encodeWith(t, MsgpackHandle, shadow.Interface())
				if len(generated) != len(reflected) {
					t.Fatalf("round %d: generated encoding of %d bytes, reflection's %d", round, len(generated), len(reflected))
				}
				if g, r := sorted(t, generated), sorted(t, reflected); !bytes.Equal(g, r) {
					i := 0
					for i < min(len(g), len(r)) && g[i] == r[i] {
						i++
					}
					t.Fatalf("round %d: generated and reflection encodings differ at byte %d of %d/%d (keys sorted):\n generated % x\n reflected % x\nvalue %#v",
						round, i, len(g), len(r), g[max(0, i-16):min(len(g), i+16)], r[max(0, i-16):min(len(r), i+16)], in.Interface())
				}
				// Reflection (an older server) reads the generated bytes.
				back := reflect.New(st)
				if err := codec.NewDecoderBytes(generated, MsgpackHandle).Decode(back.Interface()); err != nil {
					t.Fatalf("round %d: reflection decodes the generated bytes: %v", round, err)
				}
				if again := encodeWith(t, MsgpackHandle, back.Interface()); !bytes.Equal(sorted(t, again), sorted(t, generated)) {
					t.Fatalf("round %d: the generated bytes decoded by reflection encode to other values", round)
				}
				// The generated decoder reads reflection's bytes.
				out := reflect.New(typ)
				if err := Decode(reflected, out.Interface()); err != nil {
					t.Fatalf("round %d: the generated decoder reads reflection's bytes: %v", round, err)
				}
				if again := encodeWith(t, MsgpackHandle, out.Interface()); !bytes.Equal(sorted(t, again), sorted(t, generated)) {
					t.Fatalf("round %d: reflection's bytes decoded by the generated code encode to other values", round)
				}
			}
		})
	}
}

// shadows builds, for a type, a type with the same msgpack shape and no
// methods: structs become reflect.StructOf types with the same exported
// fields and tags (embedded structs inlined, as the codec inlines them),
// named slices, maps and scalars become unnamed ones.
type shadows struct {
	types map[reflect.Type]reflect.Type
	// paths: for each shadow struct type, the index path in the original
	// of each of its fields.
	paths map[reflect.Type][][]int
}

func newShadows() *shadows {
	return &shadows{types: map[reflect.Type]reflect.Type{}, paths: map[reflect.Type][][]int{}}
}

// keepTypes keep their own codecs on both sides.
var keepTypes = map[reflect.Type]bool{timeType: true, taskStatesType: true, allocIndexesType: true}

func (s *shadows) typeOf(t reflect.Type) reflect.Type {
	if st, ok := s.types[t]; ok {
		if st == nil {
			panic("shadows: recursive type " + t.String())
		}
		return st
	}
	if keepTypes[t] || t.Kind() == reflect.Struct && recursive(t, t, map[reflect.Type]bool{}) {
		return t
	}
	s.types[t] = nil
	var st reflect.Type
	switch t.Kind() {
	case reflect.Pointer:
		st = reflect.PointerTo(s.typeOf(t.Elem()))
	case reflect.Slice:
		st = reflect.SliceOf(s.typeOf(t.Elem()))
	case reflect.Array:
		st = reflect.ArrayOf(t.Len(), s.typeOf(t.Elem()))
	case reflect.Map:
		st = reflect.MapOf(s.typeOf(t.Key()), s.typeOf(t.Elem()))
	case reflect.Interface:
		st = t
	case reflect.Struct:
		var fields []reflect.StructField
		var paths [][]int
		s.fields(t, nil, &fields, &paths)
		st = reflect.StructOf(fields)
		s.paths[st] = paths
	default: // scalars: the unnamed type of the same kind
		st = basicTypes[t.Kind()]
		if st == nil {
			panic("shadows: kind " + t.Kind().String())
		}
	}
	s.types[t] = st
	return st
}

// fields appends the shadow fields of struct t, whose fields sit at
// prefix in the original.
func (s *shadows) fields(t reflect.Type, prefix []int, fields *[]reflect.StructField, paths *[][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		path := append(append([]int(nil), prefix...), i)
		if f.Anonymous {
			_, hasName := f.Tag.Lookup("codec")
			if !hasName && f.Type.Kind() == reflect.Struct {
				s.fields(f.Type, path, fields, paths)
				continue
			}
			panic("shadows: embedded field " + t.String() + "." + f.Name + " of type " + f.Type.String())
		}
		*fields = append(*fields, reflect.StructField{Name: f.Name, Type: s.typeOf(f.Type), Tag: f.Tag})
		*paths = append(*paths, path)
	}
}

// recursive reports whether target is reachable from a field of t.
func recursive(t, target reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return recursive(t.Elem(), target, seen)
	case reflect.Map:
		return recursive(t.Key(), target, seen) || recursive(t.Elem(), target, seen)
	case reflect.Struct:
		for i := range t.NumField() {
			ft := t.Field(i).Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array || ft.Kind() == reflect.Map {
				if ft.Kind() == reflect.Map && recursive(ft.Key(), target, seen) {
					return true
				}
				ft = ft.Elem()
			}
			if ft == target {
				return true
			}
			if ft.Kind() == reflect.Struct && !seen[ft] {
				seen[ft] = true
				if recursive(ft, target, seen) {
					return true
				}
			}
		}
	}
	return false
}

var basicTypes = map[reflect.Kind]reflect.Type{
	reflect.Bool: reflect.TypeFor[bool](), reflect.String: reflect.TypeFor[string](),
	reflect.Int: reflect.TypeFor[int](), reflect.Int8: reflect.TypeFor[int8](), reflect.Int16: reflect.TypeFor[int16](),
	reflect.Int32: reflect.TypeFor[int32](), reflect.Int64: reflect.TypeFor[int64](),
	reflect.Uint: reflect.TypeFor[uint](), reflect.Uint8: reflect.TypeFor[uint8](), reflect.Uint16: reflect.TypeFor[uint16](),
	reflect.Uint32: reflect.TypeFor[uint32](), reflect.Uint64: reflect.TypeFor[uint64](),
	reflect.Float32: reflect.TypeFor[float32](), reflect.Float64: reflect.TypeFor[float64](),
}

// copy sets dst (of the shadow type of src's type) to src's content.
func (s *shadows) copy(dst, src reflect.Value) {
	if dst.Type() == src.Type() {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			p := reflect.New(dst.Type().Elem())
			s.copy(p.Elem(), src.Elem())
			dst.Set(p)
		}
	case reflect.Slice:
		if !src.IsNil() {
			out := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
			for i := range src.Len() {
				s.copy(out.Index(i), src.Index(i))
			}
			dst.Set(out)
		}
	case reflect.Array:
		for i := range src.Len() {
			s.copy(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if !src.IsNil() {
			out := reflect.MakeMapWithSize(dst.Type(), src.Len())
			for it := src.MapRange(); it.Next(); {
				k, v := reflect.New(dst.Type().Key()).Elem(), reflect.New(dst.Type().Elem()).Elem()
				s.copy(k, it.Key())
				s.copy(v, it.Value())
				out.SetMapIndex(k, v)
			}
			dst.Set(out)
		}
	case reflect.Struct:
		for i, path := range s.paths[dst.Type()] {
			f, err := src.FieldByIndexErr(path)
			if err == nil {
				s.copy(dst.Field(i), f)
			}
		}
	default:
		dst.Set(src.Convert(dst.Type()))
	}
}

package msgpackread

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTruncated is an item cut off by the end of the buffer.
var ErrTruncated = errors.New("msgpack: truncated item")

// Reader reads msgpack items one at a time from a byte slice. Strings come
// back as views into the slice (valid as long as it is); nil reads as the
// zero value of whatever was asked for.
//
// The first error sticks: later reads return zero values and Err says
// what went wrong. A caller reading a map typically loops
// `for n := r.MapLen(); n > 0 && r.Err() == nil; n--` and checks Err once
// at the end.
type Reader struct {
	b   []byte
	pos int
	err error
}

// NewReader returns a Reader at the start of b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Err is the first error a read met, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records err as the reader's error unless it has one already; reads
// after it return zero values.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Pos is the offset of the next item in the slice.
func (r *Reader) Pos() int { return r.pos }

// Rest is the slice from the next item on (nil after an error).
func (r *Reader) Rest() []byte {
	if r.err != nil {
		return nil
	}
	return r.b[r.pos:]
}

// Since returns the bytes read since offset start (an earlier Pos), capped
// so that appending to them cannot overwrite what follows.
func (r *Reader) Since(start int) []byte { return r.b[start:r.pos:r.pos] }

// peek returns the first byte of the next item.
func (r *Reader) peek() (byte, bool) {
	if r.err != nil {
		return 0, false
	}
	if r.pos >= len(r.b) {
		r.Fail(ErrTruncated)
		return 0, false
	}
	return r.b[r.pos], true
}

// Take steps over the next n bytes and returns them (capped, as Since).
func (r *Reader) Take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos+n > len(r.b) {
		r.Fail(ErrTruncated)
		return nil
	}
	out := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return out
}

// bigEndian reads an n-byte (1, 2, 4 or 8) unsigned big-endian number.
func (r *Reader) bigEndian(n int) uint64 {
	b := r.Take(n)
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	case 8:
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// SkipNil reads a nil if one is next and reports whether it did.
func (r *Reader) SkipNil() bool {
	c, ok := r.peek()
	if ok && c == 0xc0 {
		r.pos++
		return true
	}
	return false
}

// MapLen reads a map header and returns its entry count (0 for nil); the
// entries follow, key then value.
func (r *Reader) MapLen() int {
	c, ok := r.peek()
	if !ok {
		return 0
	}
	switch {
	case c >= 0x80 && c <= 0x8f:
		r.pos++
		return int(c & 0x0f)
	case c == 0xde:
		r.pos++
		return int(r.bigEndian(2))
	case c == 0xdf:
		r.pos++
		return int(r.bigEndian(4))
	case c == 0xc0:
		r.pos++
		return 0
	}
	r.Fail(fmt.Errorf("msgpack: byte 0x%02x at %d where a map was expected", c, r.pos))
	return 0
}

// ArrayLen reads an array header and returns its length (0 for nil).
func (r *Reader) ArrayLen() int {
	c, ok := r.peek()
	if !ok {
		return 0
	}
	switch {
	case c >= 0x90 && c <= 0x9f:
		r.pos++
		return int(c & 0x0f)
	case c == 0xdc:
		r.pos++
		return int(r.bigEndian(2))
	case c == 0xdd:
		r.pos++
		return int(r.bigEndian(4))
	case c == 0xc0:
		r.pos++
		return 0
	}
	r.Fail(fmt.Errorf("msgpack: byte 0x%02x at %d where an array was expected", c, r.pos))
	return 0
}

// Str reads a string (or binary) item of any format as a view into the
// slice; nil reads as empty.
func (r *Reader) Str() []byte {
	c, ok := r.peek()
	if !ok {
		return nil
	}
	r.pos++
	switch {
	case c >= 0xa0 && c <= 0xbf:
		return r.Take(int(c & 0x1f))
	case c == 0xd9, c == 0xc4: // str8, bin8
		return r.Take(int(r.bigEndian(1)))
	case c == 0xda, c == 0xc5: // str16, bin16
		return r.Take(int(r.bigEndian(2)))
	case c == 0xdb, c == 0xc6: // str32, bin32
		return r.Take(int(r.bigEndian(4)))
	case c == 0xc0:
		return nil
	}
	r.pos--
	r.Fail(fmt.Errorf("msgpack: byte 0x%02x at %d where a string was expected", c, r.pos))
	return nil
}

// Uint reads a non-negative integer of any width, signed formats included
// (nil reads as 0); a negative one is an error.
func (r *Reader) Uint() uint64 {
	c, ok := r.peek()
	if !ok {
		return 0
	}
	r.pos++
	switch {
	case c <= 0x7f:
		return uint64(c)
	case c == 0xcc:
		return r.bigEndian(1)
	case c == 0xcd:
		return r.bigEndian(2)
	case c == 0xce:
		return r.bigEndian(4)
	case c == 0xcf:
		return r.bigEndian(8)
	case c >= 0xd0 && c <= 0xd3: // int8..int64: non-negative only
		n := 1 << (c - 0xd0)
		v := r.bigEndian(n)
		if v>>(8*n-1) != 0 {
			r.Fail(fmt.Errorf("msgpack: negative integer at %d where an unsigned one was expected", r.pos-n-1))
			return 0
		}
		return v
	case c == 0xc0:
		return 0
	}
	r.pos--
	r.Fail(fmt.Errorf("msgpack: byte 0x%02x at %d where an integer was expected", c, r.pos))
	return 0
}

// Skip steps over the next item, containers with everything in them.
func (r *Reader) Skip() {
	if r.err != nil {
		return
	}
	sc := Scanner{left: 1}
	done, err := sc.Scan(r.b[r.pos:])
	switch {
	case err != nil:
		r.Fail(err)
	case !done:
		r.Fail(ErrTruncated)
	default:
		r.pos += sc.pos
	}
}

// Raw steps over the next item and returns its bytes (capped, as Since).
func (r *Reader) Raw() []byte {
	start := r.pos
	r.Skip()
	if r.err != nil {
		return nil
	}
	return r.b[start:r.pos:r.pos]
}

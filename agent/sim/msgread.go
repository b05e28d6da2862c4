package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// msgReader reads msgpack items one at a time from a byte slice, without
// reflection and without copying: strings come back as views into the
// slice (valid as long as it is). The simulator uses it to read the few
// fields it needs of large answers and skip the rest (see wire.go).
//
// The first error sticks: later reads return zero values, and err says
// what went wrong.
type msgReader struct {
	b   []byte
	pos int
	err error
}

func newMsgReader(b []byte) msgReader { return msgReader{b: b} }

// errShortMsgpack is an item cut off by the end of the slice.
var errShortMsgpack = errors.New("sim: truncated msgpack")

func (r *msgReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// peek returns the first byte of the next item.
func (r *msgReader) peek() (byte, bool) {
	if r.err != nil {
		return 0, false
	}
	if r.pos >= len(r.b) {
		r.fail(errShortMsgpack)
		return 0, false
	}
	return r.b[r.pos], true
}

// take returns the next n bytes.
func (r *msgReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos+n > len(r.b) {
		r.fail(errShortMsgpack)
		return nil
	}
	out := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return out
}

// bigEndian reads an n-byte (1, 2, 4 or 8) unsigned big-endian number.
func (r *msgReader) bigEndian(n int) uint64 {
	b := r.take(n)
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

// skipNil reads a nil if one is next and reports whether it did.
func (r *msgReader) skipNil() bool {
	c, ok := r.peek()
	if ok && c == 0xc0 {
		r.pos++
		return true
	}
	return false
}

// mapLen reads a map header and returns its entry count (0 for nil).
func (r *msgReader) mapLen() int {
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
	r.fail(fmt.Errorf("sim: msgpack byte 0x%02x at %d where a map was expected", c, r.pos))
	return 0
}

// arrayLen reads an array header and returns its length (0 for nil).
func (r *msgReader) arrayLen() int {
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
	r.fail(fmt.Errorf("sim: msgpack byte 0x%02x at %d where an array was expected", c, r.pos))
	return 0
}

// str reads a string (or binary) item as a view into the slice; nil reads
// as empty.
func (r *msgReader) str() []byte {
	c, ok := r.peek()
	if !ok {
		return nil
	}
	r.pos++
	switch {
	case c >= 0xa0 && c <= 0xbf:
		return r.take(int(c & 0x1f))
	case c == 0xd9, c == 0xc4: // str8, bin8
		return r.take(int(r.bigEndian(1)))
	case c == 0xda, c == 0xc5: // str16, bin16
		return r.take(int(r.bigEndian(2)))
	case c == 0xdb, c == 0xc6: // str32, bin32
		return r.take(int(r.bigEndian(4)))
	case c == 0xc0:
		return nil
	}
	r.pos--
	r.fail(fmt.Errorf("sim: msgpack byte 0x%02x at %d where a string was expected", c, r.pos))
	return nil
}

// uint reads a non-negative integer of any width (nil reads as 0).
func (r *msgReader) uint() uint64 {
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
			r.fail(fmt.Errorf("sim: negative msgpack integer at %d where an unsigned one was expected", r.pos-n-1))
			return 0
		}
		return v
	case c == 0xc0:
		return 0
	}
	r.pos--
	r.fail(fmt.Errorf("sim: msgpack byte 0x%02x at %d where an integer was expected", c, r.pos))
	return 0
}

// skip steps over the next item, containers with everything in them.
func (r *msgReader) skip() {
	if r.err != nil {
		return
	}
	sc := msgScanner{left: 1}
	done, err := sc.scan(r.b[r.pos:])
	switch {
	case err != nil:
		r.fail(err)
	case !done:
		r.fail(errShortMsgpack)
	default:
		r.pos += sc.pos
	}
}

// raw steps over the next item and returns its bytes.
func (r *msgReader) raw() []byte {
	start := r.pos
	r.skip()
	if r.err != nil {
		return nil
	}
	return r.b[start:r.pos:r.pos]
}

// appendMsgpackStr appends s as the servers' codec writes a string
// (structs.MsgpackHandle: the old raw formats, no str8).
func appendMsgpackStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendMsgpackUint appends v in its shortest form, as the codec does.
func appendMsgpackUint(b []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(b, byte(v))
	case v <= 0xff:
		return append(b, 0xcc, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

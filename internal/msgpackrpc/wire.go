package msgpackrpc

import (
	"encoding/binary"
	"fmt"
	"net/rpc"
)

// The headers as the generic codec writes them with a MsgpackHandle that
// leaves WriteExt off: a map of the exported fields sorted by name, strings
// in the old raw formats (fixstr, str16, str32; never str8), integers in
// their shortest form.
//
//	rpc.Request:  {"Seq": uint, "ServiceMethod": str}
//	rpc.Response: {"Error": str, "Seq": uint, "ServiceMethod": str}
//
// Readers accept any msgpack map (keys in any order, str8 strings, signed
// integers, unknown keys skipped; nil reads as an empty header).

// appendRequestHeader appends r's msgpack.
func appendRequestHeader(b []byte, r *rpc.Request) []byte {
	b = append(b, 0x82)
	b = appendUint(appendStr(b, "Seq"), r.Seq)
	return appendStr(appendStr(b, "ServiceMethod"), r.ServiceMethod)
}

// appendResponseHeader appends r's msgpack.
func appendResponseHeader(b []byte, r *rpc.Response) []byte {
	b = append(b, 0x83)
	b = appendStr(appendStr(b, "Error"), r.Error)
	b = appendUint(appendStr(b, "Seq"), r.Seq)
	return appendStr(appendStr(b, "ServiceMethod"), r.ServiceMethod)
}

// readRequestHeader decodes an encoded rpc.Request into r.
func readRequestHeader(b []byte, r *rpc.Request) error {
	*r = rpc.Request{}
	m := reader{b: b}
	for n := m.mapLen(); n > 0 && m.err == nil; n-- {
		switch k := m.str(); string(k) {
		case "ServiceMethod":
			r.ServiceMethod = string(m.str())
		case "Seq":
			r.Seq = m.uint()
		default:
			m.skip()
		}
	}
	if m.err != nil {
		return fmt.Errorf("msgpackrpc: reading request header: %w", m.err)
	}
	return nil
}

// readResponseHeader decodes an encoded rpc.Response into r.
func readResponseHeader(b []byte, r *rpc.Response) error {
	*r = rpc.Response{}
	m := reader{b: b}
	for n := m.mapLen(); n > 0 && m.err == nil; n-- {
		switch k := m.str(); string(k) {
		case "ServiceMethod":
			r.ServiceMethod = string(m.str())
		case "Seq":
			r.Seq = m.uint()
		case "Error":
			r.Error = string(m.str())
		default:
			m.skip()
		}
	}
	if m.err != nil {
		return fmt.Errorf("msgpackrpc: reading response header: %w", m.err)
	}
	return nil
}

// appendStr appends s as the codec writes a string without WriteExt.
func appendStr(b []byte, s string) []byte {
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

// appendUint appends v in its shortest form, as the codec does.
func appendUint(b []byte, v uint64) []byte {
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

// reader reads msgpack items one at a time from one whole item. The first
// error sticks: later reads return zero values.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// next returns the next byte and steps over it.
func (r *reader) next() (byte, bool) {
	if r.err != nil {
		return 0, false
	}
	if r.pos >= len(r.b) {
		r.fail("truncated msgpack")
		return 0, false
	}
	r.pos++
	return r.b[r.pos-1], true
}

// take returns the next n bytes.
func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("truncated msgpack")
		return nil
	}
	r.pos += n
	return r.b[r.pos-n : r.pos]
}

// be reads an n-byte (1, 2, 4 or 8) big-endian number.
func (r *reader) be(n int) uint64 {
	b := r.take(n)
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// mapLen reads a map header (nil reads as empty).
func (r *reader) mapLen() int {
	c, ok := r.next()
	switch {
	case !ok:
		return 0
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f)
	case c == 0xde:
		return int(r.be(2))
	case c == 0xdf:
		return int(r.be(4))
	case c == 0xc0:
		return 0
	}
	r.fail("msgpack byte 0x%02x where a map was expected", c)
	return 0
}

// str reads a string or binary item as a view (nil reads as empty).
func (r *reader) str() []byte {
	c, ok := r.next()
	switch {
	case !ok:
		return nil
	case c >= 0xa0 && c <= 0xbf:
		return r.take(int(c & 0x1f))
	case c == 0xd9, c == 0xc4:
		return r.take(int(r.be(1)))
	case c == 0xda, c == 0xc5:
		return r.take(int(r.be(2)))
	case c == 0xdb, c == 0xc6:
		return r.take(int(r.be(4)))
	case c == 0xc0:
		return nil
	}
	r.fail("msgpack byte 0x%02x where a string was expected", c)
	return nil
}

// uint reads a non-negative integer of any width (nil reads as 0).
func (r *reader) uint() uint64 {
	c, ok := r.next()
	switch {
	case !ok:
		return 0
	case c <= 0x7f:
		return uint64(c)
	case c >= 0xcc && c <= 0xcf:
		return r.be(1 << (c - 0xcc))
	case c >= 0xd0 && c <= 0xd3:
		n := 1 << (c - 0xd0)
		v := r.be(n)
		if v>>(8*n-1) != 0 {
			r.fail("negative msgpack integer where an unsigned one was expected")
			return 0
		}
		return v
	case c == 0xc0:
		return 0
	}
	r.fail("msgpack byte 0x%02x where an integer was expected", c)
	return 0
}

// skip steps over the next item, containers with everything in them.
func (r *reader) skip() {
	if r.err != nil {
		return
	}
	var s scanner
	s.reset()
	done, err := s.scan(r.b[r.pos:])
	switch {
	case err != nil:
		r.fail("%w", err)
	case !done:
		r.fail("truncated msgpack")
	default:
		r.pos += s.pos
	}
}

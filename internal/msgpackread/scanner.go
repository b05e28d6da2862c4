package msgpackread

import (
	"encoding/binary"
	"errors"
)

// ErrMalformed is returned for a byte no msgpack item starts with (0xc1).
var ErrMalformed = errors.New("msgpack: malformed item (byte 0xc1)")

// Scanner finds where a run of msgpack items ends in a buffer that grows
// as the items arrive, without decoding them. It resumes where the last
// scan stopped, so items that arrive in many pieces are walked once. The
// zero value has nothing left to find; Reset arms it.
type Scanner struct {
	pos  int // bytes walked: every item before pos is complete
	left int // items still to walk (containers add their elements)
}

// Reset arms the scanner for a run of items top-level items at offset 0.
func (s *Scanner) Reset(items int) { s.pos, s.left = 0, items }

// Scan walks b (the whole buffer so far: every call since Reset passes the
// same bytes, extended) and reports whether the items are complete; they
// then end at End. It returns false while bytes are missing, and
// ErrMalformed for a byte no item starts with. Bytes after the items are
// not looked at.
func (s *Scanner) Scan(b []byte) (bool, error) {
	for s.left > 0 {
		size, elems, ok := itemSize(b[s.pos:])
		if !ok {
			return false, nil
		}
		if size < 0 {
			return false, ErrMalformed
		}
		if s.pos+size > len(b) {
			return false, nil
		}
		s.pos += size
		s.left += elems - 1
	}
	return true, nil
}

// End is where the items end once Scan reported them complete (before
// that, how far the walk got).
func (s *Scanner) End() int { return s.pos }

// itemSize reads the header of the msgpack item b starts with: size is its
// header plus payload in bytes (not counting the elements of a map or
// array), elems how many items follow as its elements (two per map
// entry). ok is false when b is too short to hold the header; size is -1
// for an invalid first byte.
func itemSize(b []byte) (size, elems int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	c := b[0]
	switch {
	case c <= 0x7f, c >= 0xe0: // positive and negative fixint
		return 1, 0, true
	case c <= 0x8f: // fixmap
		return 1, 2 * int(c&0x0f), true
	case c <= 0x9f: // fixarray
		return 1, int(c & 0x0f), true
	case c <= 0xbf: // fixstr
		return 1 + int(c&0x1f), 0, true
	}
	// lenBytes: size of the length after c (payload bytes or element
	// count); fixed: header bytes after the length (an ext's type).
	var lenBytes, fixed int
	var container, mapEntries bool
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 1, 0, true
	case 0xc1:
		return -1, 0, true
	case 0xc4, 0xd9: // bin8, str8
		lenBytes = 1
	case 0xc5, 0xda: // bin16, str16
		lenBytes = 2
	case 0xc6, 0xdb: // bin32, str32
		lenBytes = 4
	case 0xc7: // ext8
		lenBytes, fixed = 1, 1
	case 0xc8: // ext16
		lenBytes, fixed = 2, 1
	case 0xc9: // ext32
		lenBytes, fixed = 4, 1
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return 5, 0, true
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return 9, 0, true
	case 0xcc, 0xd0: // uint8, int8
		return 2, 0, true
	case 0xcd, 0xd1: // uint16, int16
		return 3, 0, true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type and data
		return 2 + 1<<(c-0xd4), 0, true
	case 0xdc: // array16
		lenBytes, container = 2, true
	case 0xdd: // array32
		lenBytes, container = 4, true
	case 0xde: // map16
		lenBytes, container, mapEntries = 2, true, true
	case 0xdf: // map32
		lenBytes, container, mapEntries = 4, true, true
	}
	if len(b) < 1+lenBytes {
		return 0, 0, false
	}
	var n int
	switch lenBytes {
	case 1:
		n = int(b[1])
	case 2:
		n = int(binary.BigEndian.Uint16(b[1:]))
	case 4:
		n = int(binary.BigEndian.Uint32(b[1:]))
	}
	header := 1 + lenBytes + fixed
	switch {
	case mapEntries:
		return header, 2 * n, true
	case container:
		return header, n, true
	}
	return header + n, 0, true
}

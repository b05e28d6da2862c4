// Package msgpackwrite appends msgpack items by hand where a hot path
// writes a few known fields (the RPC headers, snapshot record references)
// without an encoder. Each form is the one structs.MsgpackHandle writes for
// the same value, so readers cannot tell the two apart.
package msgpackwrite

import "encoding/binary"

// AppendUint appends v in msgpack's shortest unsigned form.
func AppendUint(b []byte, v uint64) []byte {
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

// AppendStr appends s as a msgpack string (the raw str forms the handle
// writes without WriteExt).
func AppendStr(b []byte, s string) []byte {
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

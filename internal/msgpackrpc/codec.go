package msgpackrpc

import (
	"bufio"
	"errors"
	"io"
	"net/rpc"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackread"
)

// Buffer sizes.
const (
	// readBufSize is the read buffer of a codec; a message that fits is
	// decoded where it lies, a longer one is gathered in a pooled buffer.
	readBufSize = 4096
	// maxPooledBuf bounds the buffers kept for reuse.
	maxPooledBuf = 1 << 20
)

// ErrMessageTooLarge is returned by a read when the message is longer
// than the limit set with SetReadLimit. The message is not consumed: the
// stream cannot go on and the caller should close the codec; what was
// gathered of it is released.
var ErrMessageTooLarge = errors.New("msgpackrpc: message larger than the read limit")

// Codec is an rpc.ServerCodec and an rpc.ClientCodec over one connection
// (a yamux stream, say). As net/rpc requires, one goroutine reads (header,
// then body, then the next header) while any number may write; each write
// leaves in one Write call on the connection.
type Codec struct {
	conn   io.ReadWriteCloser
	h      *codec.MsgpackHandle
	closed atomic.Bool

	// Read side: used by one goroutine at a time.
	br    *bufio.Reader
	dec   *codec.Decoder // bytes decoder, made by the first body read
	sc    msgpackread.Scanner
	limit int // longest message read, in bytes; 0: no limit

	wmu sync.Mutex
	enc *codec.Encoder // guarded by wmu; made by the first write
	// encIdle is what enc points at between writes (guarded by wmu): never
	// a pooled buffer, which the encoder would keep reachable after it went
	// back to the pool and was grown by its next user.
	encIdle []byte
}

var (
	_ rpc.ServerCodec = (*Codec)(nil)
	_ rpc.ClientCodec = (*Codec)(nil)
)

// NewCodec returns a codec over conn that encodes bodies with h (the
// handle the other side uses: structs.MsgpackHandle for Drover's RPC).
// Closing the codec closes conn.
func NewCodec(conn io.ReadWriteCloser, h *codec.MsgpackHandle) *Codec {
	return &Codec{conn: conn, h: h, br: bufio.NewReaderSize(conn, readBufSize)}
}

// SetReadLimit bounds the length of each message (a header or a body)
// read from now on; 0 removes the bound. A longer message fails the read
// with ErrMessageTooLarge once limit bytes of it have arrived, so no more
// than about limit bytes are held for it. It may be called between reads
// (from the reading goroutine) to give one body a different bound.
func (c *Codec) SetReadLimit(limit int) { c.limit = limit }

// ReadLimit returns the bound set with SetReadLimit.
func (c *Codec) ReadLimit() int { return c.limit }

// ReadRequestHeader reads the next request's header. It returns io.EOF
// when the connection ends cleanly before it.
func (c *Codec) ReadRequestHeader(r *rpc.Request) error {
	it, err := c.readItem()
	if err != nil {
		return err
	}
	defer c.doneItem(it)
	return readRequestHeader(it.b, r)
}

// ReadRequestBody decodes the request's body into out, or steps over it
// when out is nil.
func (c *Codec) ReadRequestBody(out any) error { return c.readBody(out) }

// ReadResponseHeader reads the next response's header.
func (c *Codec) ReadResponseHeader(r *rpc.Response) error {
	it, err := c.readItem()
	if err != nil {
		return err
	}
	defer c.doneItem(it)
	return readResponseHeader(it.b, r)
}

// ReadResponseBody decodes the response's body into out, or steps over it
// when out is nil (net/rpc does so for an error, whose body is empty).
func (c *Codec) ReadResponseBody(out any) error { return c.readBody(out) }

// WriteRequest writes a request: its header, then body.
func (c *Codec) WriteRequest(r *rpc.Request, body any) error {
	var a [64]byte
	return c.write(AppendRequestHeader(a[:0], r), body)
}

// WriteResponse writes a response: its header, then body (net/rpc passes
// an empty struct with an error).
func (c *Codec) WriteResponse(r *rpc.Response, body any) error {
	var a [64]byte
	return c.write(appendResponseHeader(a[:0], r), body)
}

// Close closes the connection; reads and writes after it return io.EOF.
// It is idempotent.
func (c *Codec) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}

// item is one framed msgpack item: b is a view into the read buffer
// (discard bytes of it, stepped over by doneItem) or into a pooled buffer.
type item struct {
	b       []byte
	discard int
	spill   *[]byte
}

// readItem frames the next msgpack item. The item is valid until doneItem.
func (c *Codec) readItem() (item, error) {
	if c.closed.Load() {
		return item{}, io.EOF
	}
	// Wait for the first byte: a clean end here is io.EOF.
	if _, err := c.br.Peek(1); err != nil {
		return item{}, err
	}
	c.sc.Reset(1)
	buf, _ := c.br.Peek(c.br.Buffered())
	done, err := c.sc.Scan(buf)
	if err != nil {
		return item{}, err
	}
	if done {
		if c.limit > 0 && c.sc.End() > c.limit {
			return item{}, ErrMessageTooLarge
		}
		return item{b: buf[:c.sc.End()], discard: c.sc.End()}, nil
	}
	// Longer than what is buffered: gather it, up to the limit. Only
	// messages longer than the read buffer pay for the check.
	spill := getBuf()
	b := append((*spill)[:0], buf...)
	c.br.Discard(len(buf))
	for {
		if _, err := c.br.Peek(1); err != nil {
			*spill = b
			putBuf(spill)
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return item{}, err
		}
		buf, _ = c.br.Peek(c.br.Buffered())
		start := len(b)
		b = append(b, buf...)
		done, err := c.sc.Scan(b)
		if err != nil {
			*spill = b
			putBuf(spill)
			return item{}, err
		}
		if done {
			if c.limit > 0 && c.sc.End() > c.limit {
				*spill = b
				putBuf(spill) // kept only if small; a large one goes to the collector
				return item{}, ErrMessageTooLarge
			}
			c.br.Discard(c.sc.End() - start)
			*spill = b
			return item{b: b[:c.sc.End()], spill: spill}, nil
		}
		c.br.Discard(len(buf))
		if c.limit > 0 && len(b) > c.limit {
			// Not done with more than limit bytes gathered: the message is
			// longer still.
			*spill = b
			putBuf(spill)
			return item{}, ErrMessageTooLarge
		}
	}
}

// doneItem releases what it holds.
func (c *Codec) doneItem(it item) {
	if it.discard > 0 {
		c.br.Discard(it.discard)
	}
	if it.spill != nil {
		putBuf(it.spill)
	}
}

func (c *Codec) readBody(out any) error {
	it, err := c.readItem()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // a header without its body
		}
		return err
	}
	defer c.doneItem(it)
	if out == nil {
		return nil
	}
	if c.dec == nil {
		c.dec = codec.NewDecoderBytes(it.b, c.h)
	} else {
		c.dec.ResetBytes(it.b)
	}
	// The handle copies every string and byte slice it decodes (no
	// ZeroCopy), so nothing decoded points into the buffer.
	err = c.dec.Decode(out)
	c.dec.ResetBytes(noBytes) // keep no view of the buffer
	return err
}

// write sends hdr followed by body's msgpack in one Write.
func (c *Codec) write(hdr []byte, body any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return io.EOF
	}
	out := getBuf()
	defer putBuf(out)
	if _, ok := body.(struct{}); ok {
		// net/rpc's body for an error response, as the codec writes it.
		*out = append(append((*out)[:0], hdr...), 0x80)
	} else {
		encoded := getBuf()
		defer putBuf(encoded)
		if c.enc == nil {
			c.enc = codec.NewEncoderBytes(encoded, c.h)
		} else {
			c.enc.ResetBytes(encoded)
		}
		err := c.enc.Encode(body)
		c.enc.ResetBytes(&c.encIdle) // keep no pointer to the pooled buffer
		if err != nil {
			return err
		}
		*out = append(append((*out)[:0], hdr...), *encoded...)
	}
	_, err := c.conn.Write(*out)
	return err
}

var noBytes = []byte{}

var bufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

// putBuf returns a buffer to the pool; large ones are left to the collector.
func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		bufs.Put(b)
	}
}

package sim

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackread"
	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/internal/netutil"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
)

// The simulator's RPC client speaks the servers' wire protocol (a yamux
// session per TCP connection, one msgpack net/rpc exchange at a time per
// stream) with less machinery than hashicorp/yamux plus net/rpc, because
// one process plays thousands of clients:
//
//   - One reader goroutine per session reads every frame, appends data to
//     its stream's response buffer and, once the buffer holds a whole
//     response (header and body, found by a msgpackread.Scanner without
//     decoding), hands it to the caller: one wake-up per call, none per
//     frame.
//   - Callers frame their requests themselves and write them through a
//     netutil.CoalescingConn that yields before each flush: no send
//     goroutine to hand each frame to and wait for, and the requests of
//     the callers one read woke leave together.
//   - Responses are decoded from bytes, not through a buffered reader.
//   - Streams stay open for reuse; a thousand watches never open and close
//     a thousand streams.
//
// The servers see standard yamux: streams opened with SYN on their first
// data frame (at most muxMaxSYN unacknowledged per session, below the
// servers' accept backlog), both windows honoured, pings answered.

// Yamux framing (hashicorp/yamux spec.md): a 12-byte header (version 0,
// type, flags, stream ID, length; big-endian), then length bytes for a
// data frame.
const (
	yamuxHeaderSize = 12

	yamuxTypeData   = 0
	yamuxTypeWindow = 1 // length is a window increment
	yamuxTypePing   = 2 // length is the ping's opaque value
	yamuxTypeGoAway = 3

	yamuxFlagSYN = 1
	yamuxFlagACK = 2
	yamuxFlagFIN = 4
	yamuxFlagRST = 8

	// yamuxWindow is the initial window of a stream, each way.
	yamuxWindow = 256 << 10
)

// Limits of the simulator's RPC client.
const (
	muxDialTimeout = 10 * time.Second
	// muxMaxSYN bounds the streams opened and not yet acknowledged per
	// session; a yamux server resets streams beyond its accept backlog
	// (256 by default).
	muxMaxSYN = 128
	// muxMaxIdleStreams bounds the open streams kept for reuse per
	// session.
	muxMaxIdleStreams = 8192
	muxReadBuffer     = 64 << 10
)

var (
	errMuxClosed    = errors.New("sim: rpc client closed")
	errMuxGoingAway = errors.New("sim: server is not accepting new streams")
	errStreamClosed = errors.New("sim: the server closed the stream")
)

// muxTransport is a Transport: one yamux session per server address,
// dialed on first use and again after it fails. Safe for concurrent use.
type muxTransport struct {
	// proto is the byte that opens each connection (the servers' RPC
	// protocol); streamPreamble opens each stream (Nomad's multiplexed
	// RPC expects the protocol of each stream first; Drover's nothing).
	proto          byte
	streamPreamble []byte
	// tls, if set: each connection is TLS (pool.ProtocolTLS and a
	// handshake come before proto).
	tls *tls.Config

	mu       sync.Mutex
	sessions map[string]*muxSession // the one new calls use, by address; guarded by mu
	// live holds every session not yet ended, including those new calls
	// no longer use (the server sent GoAway); guarded by mu.
	live   map[*muxSession]struct{}
	closed bool           // guarded by mu
	wg     sync.WaitGroup // session readers
}

func newMuxTransport() *muxTransport {
	return &muxTransport{proto: pool.ProtocolRPC, sessions: map[string]*muxSession{}, live: map[*muxSession]struct{}{}}
}

// RPC calls method on the server at addr. A typed error is the endpoint's
// answer; any other error is a transport failure.
func (t *muxTransport) RPC(addr, method string, args, reply any) error {
	s, err := t.session(addr)
	if err != nil {
		return err
	}
	st, err := s.stream()
	if err != nil {
		return err
	}
	return st.call(method, args, reply)
}

// Close ends every session (calls in flight fail) and waits for their
// readers. Later calls fail.
func (t *muxTransport) Close() {
	t.mu.Lock()
	t.closed = true
	var sessions []*muxSession
	for s := range t.live {
		sessions = append(sessions, s)
	}
	t.sessions = map[string]*muxSession{}
	t.mu.Unlock()
	for _, s := range sessions {
		<-s.ready
		s.fail(errMuxClosed)
	}
	t.wg.Wait()
}

// session returns the live session to addr, dialing it if needed
// (concurrent callers share one dial).
func (t *muxTransport) session(addr string) (*muxSession, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errMuxClosed
	}
	s := t.sessions[addr]
	if s == nil {
		s = &muxSession{t: t, addr: addr, ready: make(chan struct{}), dead: make(chan struct{}),
			syn: make(chan struct{}, muxMaxSYN), streams: map[uint32]*muxStream{}, nextID: 1}
		t.sessions[addr] = s
		t.live[s] = struct{}{}
		t.mu.Unlock()
		s.dial()
		return s, s.readyErr
	}
	t.mu.Unlock()
	<-s.ready
	return s, s.readyErr
}

// forget drops s so that the next call dials again; ended also drops it
// from the live sessions.
func (t *muxTransport) forget(s *muxSession, ended bool) {
	t.mu.Lock()
	if t.sessions[s.addr] == s {
		delete(t.sessions, s.addr)
	}
	if ended {
		delete(t.live, s)
	}
	t.mu.Unlock()
}

// muxSession is one TCP connection carrying a yamux session.
type muxSession struct {
	t    *muxTransport
	addr string

	ready    chan struct{} // closed when dial returned
	readyErr error         // the dial's error; set before ready closes
	conn     net.Conn
	w        *netutil.CoalescingConn // every write goes through it
	dead     chan struct{}           // closed by fail
	syn      chan struct{}           // a slot per stream opened, not yet acknowledged

	mu        sync.Mutex
	streams   map[uint32]*muxStream // guarded by mu
	idle      []*muxStream          // guarded by mu
	nextID    uint32                // guarded by mu; odd (client-opened)
	err       error                 // why the session ended; guarded by mu
	goingAway bool                  // guarded by mu
}

// dial connects, announces the RPC protocol and starts the reader; on
// failure the session is forgotten and readyErr set.
func (s *muxSession) dial() {
	defer close(s.ready)
	nc, err := net.DialTimeout("tcp", s.addr, muxDialTimeout)
	if err == nil {
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			tc.SetKeepAlive(true)
		}
		if s.t.tls != nil {
			var tc net.Conn
			if tc, err = pool.DialTLS(nc, s.t.tls, muxDialTimeout); err != nil {
				nc.Close()
			} else {
				nc = tc
			}
		}
		if err == nil {
			if _, err = nc.Write([]byte{s.t.proto}); err != nil {
				nc.Close()
			}
		}
	}
	if err != nil {
		s.dialFailed(fmt.Errorf("sim: dial %s: %w", s.addr, err))
		return
	}
	s.conn, s.w = nc, netutil.NewCoalescingConn(nc, netutil.YieldBeforeFlush())
	s.t.mu.Lock()
	closed := s.t.closed
	if !closed {
		s.t.wg.Add(1)
	}
	s.t.mu.Unlock()
	if closed {
		s.w.Close()
		s.dialFailed(errMuxClosed)
		return
	}
	go func() {
		defer s.t.wg.Done()
		s.readLoop()
	}()
}

// dialFailed ends a session that never started.
func (s *muxSession) dialFailed(err error) {
	s.mu.Lock()
	s.readyErr, s.err = err, err
	s.mu.Unlock()
	close(s.dead)
	s.t.forget(s, true)
}

// fail ends the session once: every stream's caller is woken with no
// response, the connection closed, the session forgotten.
func (s *muxSession) fail(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	streams := s.streams
	s.streams, s.idle = map[uint32]*muxStream{}, nil
	s.mu.Unlock()
	close(s.dead)
	s.t.forget(s, true)
	for _, st := range streams {
		st.broken.Store(true)
		st.deliver(errStreamFailed)
	}
	s.w.Close()
}

// failure returns why the session ended.
func (s *muxSession) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// stream returns an idle stream or a new one (opened by its first
// request).
func (s *muxSession) stream() (*muxStream, error) {
	s.mu.Lock()
	switch {
	case s.err != nil:
		err := s.err
		s.mu.Unlock()
		return nil, err
	case s.goingAway:
		s.mu.Unlock()
		return nil, errMuxGoingAway
	}
	if n := len(s.idle); n > 0 {
		st := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return st, nil
	}
	st := &muxStream{s: s, id: s.nextID, done: make(chan error, 1), windowCh: make(chan struct{}, 1)}
	st.sendWindow.Store(yamuxWindow)
	s.streams[st.id] = st
	s.nextID += 2
	exhausted := s.nextID > 1<<31
	if exhausted {
		s.goingAway = true // new calls go to a new session
	}
	s.mu.Unlock()
	if exhausted {
		s.t.forget(s, false)
	}
	return st, nil
}

// release takes a stream back after a call that left it clean.
func (s *muxSession) release(st *muxStream) {
	s.mu.Lock()
	if s.err == nil && len(s.idle) < muxMaxIdleStreams {
		s.idle = append(s.idle, st)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	// Half-close it; the reader forgets it when the server closes its
	// side.
	st.closing.Store(true)
	_ = s.writeFrame(yamuxTypeWindow, yamuxFlagFIN, st.id, 0)
}

// writeFrame sends a frame with no payload.
func (s *muxSession) writeFrame(typ uint8, flags uint16, id, length uint32) error {
	var h [yamuxHeaderSize]byte
	putHeader(h[:], typ, flags, id, length)
	_, err := s.w.Write(h[:])
	return err
}

func putHeader(h []byte, typ uint8, flags uint16, id, length uint32) {
	h[0], h[1] = 0, typ
	binary.BigEndian.PutUint16(h[2:], flags)
	binary.BigEndian.PutUint32(h[4:], id)
	binary.BigEndian.PutUint32(h[8:], length)
}

// readLoop reads frames until the connection fails or closes.
func (s *muxSession) readLoop() {
	r := bufio.NewReaderSize(s.conn, muxReadBuffer)
	var h [yamuxHeaderSize]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			s.fail(fmt.Errorf("sim: session to %s: %w", s.addr, err))
			return
		}
		if h[0] != 0 {
			s.fail(fmt.Errorf("sim: session to %s: yamux version %d", s.addr, h[0]))
			return
		}
		typ, flags := h[1], binary.BigEndian.Uint16(h[2:])
		id, length := binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
		var err error
		switch typ {
		case yamuxTypeData, yamuxTypeWindow:
			err = s.handleStream(r, typ, flags, id, length)
		case yamuxTypePing:
			if flags&yamuxFlagSYN != 0 {
				err = s.writeFrame(yamuxTypePing, yamuxFlagACK, 0, length)
			}
		case yamuxTypeGoAway:
			// The server takes no new streams; calls in flight finish.
			s.mu.Lock()
			s.goingAway = true
			s.mu.Unlock()
			s.t.forget(s, false)
		default:
			err = fmt.Errorf("yamux frame type %d", typ)
		}
		if err != nil {
			s.fail(fmt.Errorf("sim: session to %s: %w", s.addr, err))
			return
		}
	}
}

// handleStream handles a data or window frame.
func (s *muxSession) handleStream(r *bufio.Reader, typ uint8, flags uint16, id, length uint32) error {
	s.mu.Lock()
	st := s.streams[id]
	s.mu.Unlock()
	if st == nil {
		if flags&yamuxFlagSYN != 0 {
			// The servers never open streams to a client: refuse.
			if err := s.writeFrame(yamuxTypeWindow, yamuxFlagRST, id, 0); err != nil {
				return err
			}
		}
		if typ == yamuxTypeData {
			_, err := r.Discard(int(length))
			return err
		}
		return nil
	}
	if flags&(yamuxFlagACK|yamuxFlagRST|yamuxFlagFIN) != 0 {
		st.releaseSYN()
	}
	if typ == yamuxTypeWindow {
		if length > 0 {
			st.sendWindow.Add(length)
			st.wakeSender()
		}
	} else if length > 0 {
		if err := st.readData(r, length); err != nil {
			return err
		}
	}
	if flags&(yamuxFlagRST|yamuxFlagFIN) != 0 {
		// The server ended the stream (a FIN answers ours, or it gave
		// up on the stream): forget it and wake a caller.
		s.mu.Lock()
		delete(s.streams, id)
		s.mu.Unlock()
		if flags&yamuxFlagFIN != 0 && !st.closing.Load() {
			if err := s.writeFrame(yamuxTypeWindow, yamuxFlagFIN, id, 0); err != nil {
				return err
			}
		}
		st.broken.Store(true)
		st.wakeSender()
		st.deliver(errStreamFailed)
	}
	return nil
}

// muxStream is one yamux stream carrying one call at a time.
type muxStream struct {
	s  *muxSession
	id uint32
	// pending is the call in flight: set by the caller before it sends,
	// taken by the reader, which decodes the response into its reply and
	// sends the outcome on done (capacity 1): nil, the endpoint's error
	// (rpc.ServerError), a decoding error, or errStreamFailed.
	pending atomic.Pointer[pendingCall]
	done    chan error

	// Used only by the session's reader:
	buf     *[]byte             // the response arriving (pooled); nil between responses
	scan    msgpackread.Scanner // where the response ends
	unacked uint32              // bytes received, not yet returned to the window

	// Used only by the caller:
	opened bool // SYN sent
	// call1 is what pending points at while a call is in flight (one at
	// a time per stream): the reader is done with it before it delivers
	// the outcome the caller waits for.
	call1 pendingCall

	synHeld    atomic.Bool   // holds a slot of the session's syn until acknowledged
	sendWindow atomic.Uint32 // bytes the server can take now
	windowCh   chan struct{} // capacity 1: the window grew or the stream broke
	broken     atomic.Bool   // no further calls on it
	closing    atomic.Bool   // we sent FIN
}

// pendingCall is a call waiting for its response.
type pendingCall struct {
	seq   uint64
	reply any
}

// errStreamFailed tells a caller that its stream or session failed (the
// session's failure says why).
var errStreamFailed = errors.New("sim: stream failed")

// readData appends a data frame to the response; a complete response is
// decoded here, on the reader (whose stack is already deep: decoding on
// thousands of callers' goroutines grows and shrinks their stacks over
// and over), and the outcome goes to the caller. A *rawReply is not
// decoded: it takes the response buffer, which its caller reads with a
// msgpackread.Reader (shallow) and gives back. The bytes go back to the
// server's window at once (the buffer here is not bounded by it).
func (st *muxStream) readData(r *bufio.Reader, length uint32) error {
	if st.buf == nil {
		st.buf = responseBufs.Get().(*[]byte)
		*st.buf = (*st.buf)[:0]
		st.scan.Reset(2) // rpc.Response header, then the body
	}
	n := len(*st.buf)
	b := slices.Grow(*st.buf, int(length))[:n+int(length)] // read over, not cleared
	*st.buf = b
	if _, err := io.ReadFull(r, b[n:]); err != nil {
		return err
	}
	st.unacked += length
	if st.unacked >= yamuxWindow/2 {
		if err := st.s.writeFrame(yamuxTypeWindow, 0, st.id, st.unacked); err != nil {
			return err
		}
		st.unacked = 0
	}
	done, err := st.scan.Scan(b)
	if err != nil {
		return err
	}
	if done {
		if st.scan.End() != len(b) {
			return fmt.Errorf("stream %d: %d bytes after a response", st.id, len(b)-st.scan.End())
		}
		buf := st.buf
		st.buf = nil
		pc := st.pending.Swap(nil)
		if pc == nil {
			return fmt.Errorf("stream %d: a response to no call", st.id)
		}
		kept, err := decodeResponse(buf, pc.seq, pc.reply)
		if !kept {
			putResponseBuf(buf)
		}
		st.deliver(err)
	}
	return nil
}

// deliver hands a call's outcome to the caller without blocking; a second
// outcome before the caller took the first is dropped.
func (st *muxStream) deliver(err error) {
	select {
	case st.done <- err:
	default:
	}
}

// releaseSYN gives back the stream's slot of unacknowledged opens.
func (st *muxStream) releaseSYN() {
	if st.synHeld.Swap(false) {
		<-st.s.syn
	}
}

func (st *muxStream) wakeSender() {
	select {
	case st.windowCh <- struct{}{}:
	default:
	}
}

// callSeq numbers requests; the server echoes the number.
var callSeq atomic.Uint64

// call runs one exchange on st and returns it to the session unless the
// stream failed.
func (st *muxStream) call(method string, args, reply any) error {
	seq := callSeq.Add(1)
	st.call1 = pendingCall{seq: seq, reply: reply}
	st.pending.Store(&st.call1)
	req := encoders.Get().(*requestEncoder)
	var preamble []byte
	if !st.opened {
		preamble = st.s.t.streamPreamble
	}
	err := req.encode(method, seq, args, preamble)
	if err == nil {
		err = st.send(req.buf)
	}
	req.release()
	if err != nil {
		st.abandon()
		return fmt.Errorf("sim: rpc %s to %s: %w", method, st.s.addr, err)
	}
	err = <-st.done
	if err == errStreamFailed {
		if err = st.s.failure(); err == nil {
			err = errStreamClosed
		}
		return fmt.Errorf("sim: rpc %s to %s: %w", method, st.s.addr, err)
	}
	// The response was read whole (even one that failed to decode): the
	// stream is clean, and the reader done with call1.
	st.call1.reply = nil
	if !st.broken.Load() {
		st.s.release(st)
	}
	if err == nil {
		return nil
	}
	var serverErr rpc.ServerError
	if errors.As(err, &serverErr) {
		return structs.DecodeRPCError(string(serverErr))
	}
	return fmt.Errorf("sim: rpc %s to %s: %w", method, st.s.addr, err)
}

// abandon gives up a stream in an unknown state: it is reset and
// forgotten.
func (st *muxStream) abandon() {
	s := st.s
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
	st.broken.Store(true)
	st.releaseSYN()
	if st.opened {
		_ = s.writeFrame(yamuxTypeWindow, yamuxFlagRST, st.id, 0)
	}
}

// send writes a request (frame header space and payload in buf) within
// the stream's send window, opening the stream with its first frame.
func (st *muxStream) send(buf []byte) error {
	payload := buf[yamuxHeaderSize:]
	for first := true; first || len(payload) > 0; first = false {
		var flags uint16
		if !st.opened {
			select {
			case st.s.syn <- struct{}{}:
			case <-st.s.dead:
				return st.s.failure()
			}
			st.synHeld.Store(true)
			st.opened, flags = true, yamuxFlagSYN
		}
		n, err := st.reserve(len(payload))
		if err != nil {
			return err
		}
		if first && n == len(payload) {
			// The whole request fits: one frame, written in place.
			putHeader(buf, yamuxTypeData, flags, st.id, uint32(n))
			_, err := st.s.w.Write(buf)
			return err
		}
		frame := make([]byte, yamuxHeaderSize+n)
		putHeader(frame, yamuxTypeData, flags, st.id, uint32(n))
		copy(frame[yamuxHeaderSize:], payload[:n])
		if _, err := st.s.w.Write(frame); err != nil {
			return err
		}
		payload = payload[n:]
	}
	return nil
}

// reserve takes up to want bytes of the send window (at least one),
// waiting for the server to open it.
func (st *muxStream) reserve(want int) (int, error) {
	for {
		if st.broken.Load() {
			if err := st.s.failure(); err != nil {
				return 0, err
			}
			return 0, errStreamClosed
		}
		w := st.sendWindow.Load()
		if w > 0 {
			n := uint32(min(want, int(w)))
			if st.sendWindow.CompareAndSwap(w, w-n) {
				return int(n), nil
			}
			continue
		}
		select {
		case <-st.windowCh:
		case <-st.s.dead:
		}
	}
}

// requestEncoder encodes a request into body, then frames it into buf
// after room for the frame header.
type requestEncoder struct {
	buf, body []byte
	enc       *codec.Encoder
}

// maxPooledBuf: larger buffers are left to the collector.
const maxPooledBuf = 1 << 20

var (
	encoders = sync.Pool{New: func() any {
		e := &requestEncoder{body: make([]byte, 0, 1024)}
		e.enc = codec.NewEncoderBytes(&e.body, structs.MsgpackHandle)
		return e
	}}
	decoders     = sync.Pool{New: func() any { return codec.NewDecoderBytes(noBytes, structs.MsgpackHandle) }}
	responseBufs = sync.Pool{New: func() any {
		b := make([]byte, 0, 4096)
		return &b
	}}
	noBytes = []byte{}
)

// encode frames a request into buf: room for the frame header, the
// stream's preamble (a new stream's first request only), the rpc.Request
// header (as the servers' codec writes it), then args.
func (e *requestEncoder) encode(method string, seq uint64, args any, preamble []byte) error {
	e.body = e.body[:0]
	e.enc.ResetBytes(&e.body)
	if err := e.enc.Encode(args); err != nil {
		return err
	}
	b := append(e.buf[:0], make([]byte, yamuxHeaderSize)...)
	b = append(b, preamble...)
	b = msgpackrpc.AppendRequestHeader(b, &rpc.Request{ServiceMethod: method, Seq: seq})
	e.buf = append(b, e.body...)
	return nil
}

func (e *requestEncoder) release() {
	if cap(e.buf) <= maxPooledBuf && cap(e.body) <= maxPooledBuf {
		encoders.Put(e)
	}
}

// putResponseBuf returns a response buffer to the pool (larger ones are
// left to the collector).
func putResponseBuf(buf *[]byte) {
	if cap(*buf) <= maxPooledBuf {
		*buf = (*buf)[:0]
		responseBufs.Put(buf)
	}
}

// decodeResponse reads a response (rpc.Response header, then the body) in
// *buf; an error the endpoint answered is an rpc.ServerError. A *rawReply
// takes the buffer itself (kept is true: the caller must not reuse it);
// any other reply is decoded into, zeroed first.
func decodeResponse(buf *[]byte, seq uint64, reply any) (kept bool, err error) {
	b := *buf
	r := msgpackread.NewReader(b)
	h, err := msgpackrpc.ReadResponseHeader(&r)
	if err != nil {
		return false, err
	}
	if h.Seq != seq {
		return false, fmt.Errorf("response to request %d on the stream of request %d", h.Seq, seq)
	}
	if len(h.Error) > 0 {
		return false, rpc.ServerError(h.Error)
	}
	body := r.Rest()
	if raw, ok := reply.(*rawReply); ok {
		raw.take(buf, body)
		return true, nil
	}
	dec := decoders.Get().(*codec.Decoder)
	defer func() {
		dec.ResetBytes(noBytes)
		decoders.Put(dec)
	}()
	dec.ResetBytes(body)
	// Decoding merges into what a value holds; a retried call passes the
	// reply an earlier attempt half filled.
	if rv := reflect.ValueOf(reply); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return false, dec.Decode(reply)
}

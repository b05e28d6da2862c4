package server

import (
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"reflect"
	"sync"

	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/structs"
)

// The RPC server. Remote calls speak net/rpc's protocol (a request
// header, its body; a response header, its body) through a codec
// (msgpackrpc); clients are net/rpc clients and agent/sim's. The server
// side is ours rather than net/rpc.Server for one reason: net/rpc starts
// a goroutine per call, and a call's path (reflection, a blocking query,
// the encoder) is deeper than a new goroutine's stack, so every call grew
// and copied its stack once or twice. Client watches answer thousands of
// calls a second; the copies were 2.5% of a c1m-small run's CPU. Here
// calls run on pooled goroutines (rpcWorkers) whose stacks have already
// grown. Behaviour is net/rpc's: requests on a stream are read in order
// and served concurrently, responses are written whole and one at a time,
// an error is sent as the response's error text with an empty body, and a
// request for an unknown method (or whose body does not decode) gets an
// error answer while the stream goes on.

// rpcMethod is an endpoint method bound to its receiver, of the shape
// func(*Args, *Reply) error.
type rpcMethod struct {
	fn        reflect.Value
	argType   reflect.Type // Args
	replyType reflect.Type // Reply
	// maxBody, when not 0, bounds the request body instead of the
	// server's message bound (rpcBodyLimits).
	maxBody int
	access  rpcAccess // who may call it remotely (rpc_roles.go)
}

var errorType = reflect.TypeFor[error]()

// rpcMethods lists the RPC methods of the receivers, by "Name.Method":
// every exported method of the shape func(*Args, *Reply) error. A
// receiver with an exported method of another shape is a programming
// error.
func rpcMethods(receivers map[string]any) (map[string]*rpcMethod, error) {
	out := make(map[string]*rpcMethod)
	for name, recv := range receivers {
		v := reflect.ValueOf(recv)
		t := v.Type()
		for i := 0; i < t.NumMethod(); i++ {
			m := v.Method(i)
			mt := m.Type()
			if mt.NumIn() != 2 || mt.NumOut() != 1 || mt.Out(0) != errorType ||
				mt.In(0).Kind() != reflect.Pointer || mt.In(1).Kind() != reflect.Pointer {
				return nil, fmt.Errorf("RPC method %s.%s is %s, want func(*Args, *Reply) error", name, t.Method(i).Name, mt)
			}
			full := name + "." + t.Method(i).Name
			out[full] = &rpcMethod{fn: m, argType: mt.In(0).Elem(), replyType: mt.In(1).Elem(), maxBody: rpcBodyLimits[full]}
		}
	}
	return out, nil
}

// rpcCall is one request being served.
type rpcCall struct {
	stream *rpcStream
	method *rpcMethod
	req    rpc.Request
	args   reflect.Value // *Args
	// srv and acl: with ACLs enabled the call runs under its ACL rule
	// (Server.callWithACL, rpc_acl.go).
	srv *Server
	acl bool
}

// rpcStream is one stream's codec and what its calls share.
type rpcStream struct {
	codec   rpc.ServerCodec
	sending sync.Mutex
	calls   sync.WaitGroup
}

// readLimiter is a codec that bounds the messages it reads
// (msgpackrpc.Codec).
type readLimiter interface {
	SetReadLimit(int)
	ReadLimit() int
}

// serveRPC serves the requests of one stream until it fails or closes,
// waits for the calls in progress to answer, and closes the codec. A
// message over the codec's read limit (msgpackrpc.ErrMessageTooLarge)
// ends the stream: a body is answered with a too_large error first.
func (s *Server) serveRPC(codec rpc.ServerCodec) { s.serveRPCAs(codec, connTrusted) }

// serveRPCAs is serveRPC on a connection of the given role: a call the
// role may not make is answered with its error (rpc_roles.go).
func (s *Server) serveRPCAs(codec rpc.ServerCodec, role connRole) {
	st := &rpcStream{codec: codec}
	lim, _ := codec.(readLimiter)
	for {
		c := &rpcCall{stream: st, srv: s, acl: s.aclOn}
		if err := codec.ReadRequestHeader(&c.req); err != nil {
			switch {
			case errors.Is(err, msgpackrpc.ErrMessageTooLarge):
				s.logger.Warn("rpc: request header over the size limit; closing the stream", "limit", lim.ReadLimit())
			case !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
				s.logger.Debug("rpc: reading a request header failed", "error", err)
			}
			break
		}
		c.method = s.remoteMethods[c.req.ServiceMethod]
		if c.method == nil {
			if err := codec.ReadRequestBody(nil); errors.Is(err, msgpackrpc.ErrMessageTooLarge) {
				s.tooLarge(st, &c.req, lim.ReadLimit())
				break
			}
			st.respond(&c.req, nil, "rpc: can't find method "+c.req.ServiceMethod)
			continue
		}
		c.args = reflect.New(c.method.argType)
		if err := s.readBody(codec, lim, c); err != nil {
			if errors.Is(err, msgpackrpc.ErrMessageTooLarge) {
				s.tooLarge(st, &c.req, max(c.method.maxBody, lim.ReadLimit()))
				break
			}
			st.respond(&c.req, nil, "rpc: decoding the request of "+c.req.ServiceMethod+": "+err.Error())
			continue
		}
		if role != connTrusted {
			if err := role.checkCall(c.req.ServiceMethod, c.method.access, c.args.Interface()); err != nil {
				st.respond(&c.req, nil, err.Error())
				continue
			}
		}
		st.calls.Add(1)
		s.rpcWorkers.run(c)
	}
	st.calls.Wait()
	codec.Close()
}

// readBody decodes c's request body, under the method's own bound when it
// has one.
func (s *Server) readBody(codec rpc.ServerCodec, lim readLimiter, c *rpcCall) error {
	if c.method.maxBody == 0 || lim == nil {
		return codec.ReadRequestBody(c.args.Interface())
	}
	base := lim.ReadLimit()
	lim.SetReadLimit(c.method.maxBody)
	defer lim.SetReadLimit(base)
	return codec.ReadRequestBody(c.args.Interface())
}

// tooLarge answers a request whose body is over the limit with a typed
// too_large error; the caller then closes the stream, whose unread rest
// cannot be followed.
func (s *Server) tooLarge(st *rpcStream, req *rpc.Request, limit int) {
	s.logger.Warn("rpc: request body over the size limit; closing the stream",
		"method", req.ServiceMethod, "limit", limit)
	err := structs.NewError(structs.ErrCodeTooLarge, "the request body of %s is larger than %d bytes; the stream is closed",
		req.ServiceMethod, limit)
	st.respond(req, nil, err.Error())
}

// serve runs the call and answers it.
func (c *rpcCall) serve() {
	defer c.stream.calls.Done()
	reply := reflect.New(c.method.replyType)
	var err error
	if c.acl {
		err = c.srv.callWithACL(c.req.ServiceMethod, c.method, c.args, reply)
	} else {
		err = c.srv.callEndpoint(c.method, c.args, reply)
	}
	if err != nil {
		c.stream.respond(&c.req, nil, err.Error())
		return
	}
	c.stream.respond(&c.req, reply.Interface(), "")
}

// rpcNoBody is the body of an error answer, as net/rpc sends it.
var rpcNoBody = struct{}{}

// respond writes the answer to req: body, or errText with an empty body.
// A write error is the stream failing; its reader sees that too.
func (st *rpcStream) respond(req *rpc.Request, body any, errText string) {
	resp := rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq, Error: errText}
	if errText != "" {
		body = rpcNoBody
	}
	st.sending.Lock()
	defer st.sending.Unlock()
	_ = st.codec.WriteResponse(&resp, body)
}

// rpcWorkers runs calls on goroutines that outlive them: a call goes to
// an idle worker if there is one (the one idle the shortest time), else
// to a new goroutine, which stays as a worker when its call is done
// unless rpcMaxIdleWorkers are idle already. A worker's stack keeps its
// size between calls (until the garbage collector shrinks a stack that
// stays mostly unused), so calls do not grow stacks from a new
// goroutine's size. Calls may block for minutes (blocking queries):
// there is no limit on how many run at once.
type rpcWorkers struct {
	mu      sync.Mutex
	idle    []chan *rpcCall // each worker's; nil sent: exit
	stopped bool
	live    int // worker goroutines, busy or idle; guarded by mu
}

// rpcMaxIdleWorkers bounds the idle workers kept (each a parked goroutine
// with its stack).
const rpcMaxIdleWorkers = 256

func (p *rpcWorkers) run(c *rpcCall) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w <- c
		return
	}
	p.live++
	p.mu.Unlock()
	go p.work(c)
}

func (p *rpcWorkers) work(c *rpcCall) {
	next := make(chan *rpcCall, 1)
	for c != nil {
		c.serve()
		p.mu.Lock()
		if p.stopped || len(p.idle) >= rpcMaxIdleWorkers {
			p.live--
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, next)
		p.mu.Unlock()
		c = <-next
	}
	p.mu.Lock()
	p.live--
	p.mu.Unlock()
}

// stop ends the idle workers and keeps the busy ones from idling: a call
// made after stop runs on a goroutine of its own.
func (p *rpcWorkers) stop() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.stopped = nil, true
	p.mu.Unlock()
	for _, w := range idle {
		w <- nil
	}
}

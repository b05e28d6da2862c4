package client

import (
	"errors"
	"slices"
	"sync"

	"github.com/drover-project/drover/structs"
)

// Transport sends one RPC to the server at addr. *pool.Pool satisfies it.
type Transport interface {
	RPC(addr, method string, args, reply any) error
}

// LocalServer is a server in the same process (*server.Server satisfies
// it): calls to its address skip the network.
type LocalServer interface {
	RPC(method string, args, reply any) error
	RPCAddr() string
}

// localTransport routes calls for the local server's address in process
// and everything else through next (which may be nil).
type localTransport struct {
	local LocalServer
	next  Transport
}

func (t *localTransport) RPC(addr, method string, args, reply any) error {
	if addr == t.local.RPCAddr() || t.next == nil {
		return t.local.RPC(method, args, reply)
	}
	return t.next.RPC(addr, method, args, reply)
}

// serverList is the ordered set of servers the client may use, with the
// one it uses now. Configured servers are never forgotten; servers learnt
// from registration answers are added.
type serverList struct {
	mu    sync.Mutex
	addrs []string // guarded by mu
	cur   int      // index into addrs; guarded by mu
}

func newServerList(addrs []string) *serverList {
	l := &serverList{}
	for _, a := range addrs {
		if a != "" && !slices.Contains(l.addrs, a) {
			l.addrs = append(l.addrs, a)
		}
	}
	return l
}

// current returns the server in use ("" when none is known).
func (l *serverList) current() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.addrs) == 0 {
		return ""
	}
	return l.addrs[l.cur]
}

// all returns the servers, the current one first.
func (l *serverList) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.addrs))
	for i := range l.addrs {
		out = append(out, l.addrs[(l.cur+i)%len(l.addrs)])
	}
	return out
}

// failed moves on from addr if it is still the current server.
func (l *serverList) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.addrs) > 0 && l.addrs[l.cur] == addr {
		l.cur = (l.cur + 1) % len(l.addrs)
	}
}

// add learns servers from a registration answer.
func (l *serverList) add(infos []*structs.NodeServerInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range infos {
		if s != nil && s.RPCAdvertiseAddr != "" && !slices.Contains(l.addrs, s.RPCAdvertiseAddr) {
			l.addrs = append(l.addrs, s.RPCAdvertiseAddr)
		}
	}
}

// failoverErr reports whether another server might succeed where this one
// failed: transport failures (any error that is not a typed answer) and
// answers saying the cluster has no usable leader right now or the server
// is going away.
func failoverErr(err error) bool {
	var typed *structs.Error
	var invalid *structs.ValidationError
	if !errors.As(err, &typed) && !errors.As(err, &invalid) {
		return true
	}
	return errors.Is(err, structs.ErrNoLeader) || errors.Is(err, structs.ErrNotLeader) ||
		errors.Is(err, structs.ErrShutdown)
}

// errNoServers is returned when the client knows no server at all.
var errNoServers = structs.NewError(structs.ErrCodeNoLeader, "no servers configured")

// RPC calls method on the current server, failing over to the next known
// server on transport errors and leaderless answers (each server is tried
// once per call). Other errors are returned as they are: typed, as the
// server answered.
func (c *Client) RPC(method string, args, reply any) error {
	addrs := c.servers.all()
	if len(addrs) == 0 {
		return errNoServers
	}
	var last error
	for range addrs {
		addr := c.servers.current()
		err := c.transport.RPC(addr, method, args, reply)
		if err == nil {
			return nil
		}
		last = err
		if !failoverErr(err) {
			return err
		}
		c.logger.Debug("RPC failed; trying the next server", "method", method, "server", addr, "error", err)
		c.servers.failed(addr)
	}
	return last
}

// Servers returns the servers the client knows, the current one first.
func (c *Client) Servers() []string { return c.servers.all() }

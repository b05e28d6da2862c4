package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Transport sends one RPC to the server at addr. *pool.Pool satisfies it.
type Transport interface {
	RPC(addr, method string, args, reply any) error
}

// ContextTransport is a Transport that can give up on a call: when ctx
// ends, a call not yet answered fails at once (*pool.Pool satisfies it).
// The client bounds its heartbeats and watches with it; over a Transport
// without it, calls run to their end.
type ContextTransport interface {
	Transport
	RPCContext(ctx context.Context, addr, method string, args, reply any) error
}

// Prober is a Transport that can check its connection to a server after a
// call timed out, and close it when it is dead, so that the calls waiting
// on it fail over too (*pool.Pool satisfies it).
type Prober interface {
	Probe(addr string, timeout time.Duration) bool
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

// RPCContext is RPC with ctx for the remote servers. A call to the local
// server runs to its end (a blocking query carries its own context, see
// structs.QueryOptions.WithContext): it crosses no network that could
// silently drop it, and the server answers no_leader by its
// NoLeaderTimeout.
func (t *localTransport) RPCContext(ctx context.Context, addr, method string, args, reply any) error {
	if addr == t.local.RPCAddr() || t.next == nil {
		return t.local.RPC(method, args, reply)
	}
	return callContext(ctx, t.next, addr, method, args, reply)
}

// Probe probes the remote servers' connections.
func (t *localTransport) Probe(addr string, timeout time.Duration) bool {
	if p, ok := t.next.(Prober); ok && addr != t.local.RPCAddr() {
		return p.Probe(addr, timeout)
	}
	return false
}

// callContext calls through tr with ctx when tr can give up on a call.
func callContext(ctx context.Context, tr Transport, addr, method string, args, reply any) error {
	if ct, ok := tr.(ContextTransport); ok && ctx.Done() != nil {
		return ct.RPCContext(ctx, addr, method, args, reply)
	}
	return tr.RPC(addr, method, args, reply)
}

// serverList is the ordered set of servers the client may use, with the
// one it uses now. Configured servers are never forgotten; servers learnt
// from registration answers are added.
type serverList struct {
	mu    sync.Mutex
	addrs []string // guarded by mu
	cur   int      // index into addrs; guarded by mu
	// moves counts the moves away from a failed server; guarded by mu.
	moves uint64
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
		l.moves++
	}
}

// moved returns how many times the client has moved away from a failed
// server: a change means calls made before may be waiting on a server
// the client has left.
func (l *serverList) moved() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moves
}

// startRandom makes a server picked at random the current one, so that
// clients configured with the same list spread over the servers (Nomad's
// client shuffles its list too).
func (l *serverList) startRandom() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.addrs) > 1 {
		l.cur = rand.IntN(len(l.addrs))
	}
}

// candidate picks a server other than the current one at random ("" when
// the client knows only one).
func (l *serverList) candidate() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.addrs) < 2 {
		return ""
	}
	return l.addrs[(l.cur+1+rand.IntN(len(l.addrs)-1))%len(l.addrs)]
}

// switchTo makes addr the current server if the current one is still
// from; it is a move by choice, not away from a failed server, so moves
// is left alone.
func (l *serverList) switchTo(from, addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.Index(l.addrs, addr)
	if i < 0 || l.addrs[l.cur] != from {
		return false
	}
	l.cur = i
	return true
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

// Bounds on the wait for a ping's answer when a server did not answer a
// call in time (Prober): a live server answers a ping at once, even while
// it waits for a leader.
const (
	minProbeTimeout = 500 * time.Millisecond
	maxProbeTimeout = 5 * time.Second
)

// errNoServers is returned when the client knows no server at all.
var errNoServers = structs.NewError(structs.ErrCodeNoLeader, "no servers configured")

// RPC calls method on the current server, failing over to the next known
// server on transport errors and leaderless answers (each server is tried
// once per call). Other errors are returned as they are: typed, as the
// server answered.
func (c *Client) RPC(method string, args, reply any) error {
	_, err := c.rpc(context.Background(), 0, method, args, reply)
	return err
}

// rpc is RPC under ctx (its end stops the call, and no server is blamed
// for it) with each server's attempt bounded by attempt (0: unbounded).
// A server that does not answer within attempt is left for the next one
// at once, as if it had failed, and its connection is probed in the
// background: a dead one is closed, failing over every call waiting on it.
// failed counts the attempts that failed, the last one included.
func (c *Client) rpc(ctx context.Context, attempt time.Duration, method string, args, reply any) (failed int, err error) {
	addrs := c.servers.all()
	if len(addrs) == 0 {
		return 0, errNoServers
	}
	var last error
	for range addrs {
		addr := c.servers.current()
		timedOut, err := c.attempt(ctx, attempt, addr, method, args, reply)
		if err == nil {
			return failed, nil
		}
		failed++
		last = err
		if ctx.Err() != nil {
			return failed, err
		}
		if !timedOut && !failoverErr(err) {
			return failed, err
		}
		if timedOut {
			c.logger.Warn("server did not answer in time; trying the next server", "method", method, "server", addr, "timeout", attempt)
			if p, ok := c.transport.(Prober); ok {
				go p.Probe(addr, min(max(attempt, minProbeTimeout), maxProbeTimeout))
			}
		} else {
			c.logger.Debug("RPC failed; trying the next server", "method", method, "server", addr, "error", err)
		}
		c.servers.failed(addr)
	}
	return failed, last
}

// attempt makes one call to addr within d (0: unbounded); timedOut
// reports that d ran out first.
func (c *Client) attempt(ctx context.Context, d time.Duration, addr, method string, args, reply any) (timedOut bool, err error) {
	if d <= 0 {
		return false, callContext(ctx, c.transport, addr, method, args, reply)
	}
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err = callContext(actx, c.transport, addr, method, args, reply)
	return err != nil && ctx.Err() == nil && actx.Err() != nil, err
}

// Servers returns the servers the client knows, the current one first.
func (c *Client) Servers() []string { return c.servers.all() }

// Rebalancing: a client that failed over stays on the server it reached,
// so failovers and rolling restarts pile clients onto a few servers. As
// Nomad's client does, every RebalanceInterval (plus up to half of it at
// random, so clients do not move together) the client picks another server
// at random and moves to it if that server answers with a leader.
const (
	DefaultRebalanceInterval = 5 * time.Minute
	rebalanceTimeout         = 5 * time.Second
)

func (c *Client) rebalanceLoop() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.shutdownCh
		cancel()
	}()
	for {
		d := c.cfg.RebalanceInterval + rand.N(c.cfg.RebalanceInterval/2+1)
		if clock.Sleep(ctx, c.cfg.Clock, d) != nil {
			return
		}
		c.rebalance(ctx)
	}
}

// rebalance moves the client to a server picked at random among the others
// when it answers with a leader within rebalanceTimeout; it reports the
// server it moved to ("" when it stayed).
func (c *Client) rebalance(ctx context.Context) string {
	from := c.servers.current()
	to := c.servers.candidate()
	if to == "" {
		return ""
	}
	actx, cancel := context.WithTimeout(ctx, rebalanceTimeout)
	defer cancel()
	var leader string
	if err := callContext(actx, c.transport, to, "Status.Leader", &structs.GenericRequest{}, &leader); err != nil || leader == "" {
		c.logger.Debug("rebalancing: staying on the current server", "server", from, "candidate", to, "error", err)
		return ""
	}
	if !c.servers.switchTo(from, to) {
		return ""
	}
	c.logger.Debug("rebalanced to another server", "from", from, "to", to)
	return to
}

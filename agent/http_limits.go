package agent

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultMaxConnsPerClient bounds the HTTP connections one client address
// may hold open at once (Nomad's limits.http_max_conns_per_client).
const DefaultMaxConnsPerClient = 100

// rejectWriteTimeout bounds writing the 429 to a refused connection.
const rejectWriteTimeout = 100 * time.Millisecond

// connLimiter caps open connections per client IP. It is an
// http.Server.ConnState hook: a connection over the cap is answered
// "429 Too Many Requests" and closed before any request on it is read.
type connLimiter struct {
	max    int
	logger hclog.Logger

	mu    sync.Mutex
	perIP map[string]int      // guarded by mu
	conns map[net.Conn]string // counted connections -> IP; guarded by mu
}

func newConnLimiter(max int, logger hclog.Logger) *connLimiter {
	return &connLimiter{max: max, logger: logger, perIP: map[string]int{}, conns: map[net.Conn]string{}}
}

// connLimitHook returns the ConnState hook of a limiter of max
// connections per client address, or nil for max 0 (no limit).
func connLimitHook(max int, logger hclog.Logger) func(net.Conn, http.ConnState) {
	if max <= 0 {
		return nil
	}
	return newConnLimiter(max, logger).connState
}

// connState is the http.Server.ConnState hook.
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		ip := clientIP(c.RemoteAddr())
		l.mu.Lock()
		if l.perIP[ip] >= l.max {
			l.mu.Unlock()
			l.reject(c, ip)
			return
		}
		l.perIP[ip]++
		l.conns[c] = ip
		l.mu.Unlock()
	case http.StateHijacked, http.StateClosed:
		l.mu.Lock()
		if ip, ok := l.conns[c]; ok {
			delete(l.conns, c)
			if l.perIP[ip]--; l.perIP[ip] <= 0 {
				delete(l.perIP, ip)
			}
		}
		l.mu.Unlock()
	}
}

// open returns the number of counted connections from ip.
func (l *connLimiter) open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perIP[ip]
}

func (l *connLimiter) reject(c net.Conn, ip string) {
	l.logger.Warn("too many connections from one client; refusing", "client", ip, "limit", l.max)
	msg := fmt.Sprintf("Too many open connections from %s (the limit is %d)\n", ip, l.max)
	_ = c.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
	_ = c.Close()
}

func clientIP(addr net.Addr) string {
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

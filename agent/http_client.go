package agent

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/structs"
)

// LocalClient is what the HTTP API needs from the agent's own client, if
// it runs one; *client.Client satisfies it.
type LocalClient interface {
	NodeID() string
	// TaskLogs streams a task's "stdout" or "stderr". offset >= 0 starts
	// that far into the oldest file kept, < 0 that far before the end.
	TaskLogs(allocID, task, logType string, follow bool, offset int64) (io.ReadCloser, error)
}

// HTTPOption configures NewHTTPHandler.
type HTTPOption func(*httpAPI)

// WithLocalClient serves the client endpoints (task logs) from c and
// names its node in /v1/agent/self (stats.client.node_id), which
// `drover node status -self` reads.
func WithLocalClient(c LocalClient) HTTPOption {
	return func(h *httpAPI) { h.client = c }
}

// WithOutgoingTLS makes the requests this agent sends to other agents'
// HTTPS APIs (log proxying) use conf: the CA and this agent's
// certificate, which verify_https_client requires.
func WithOutgoingTLS(conf *tls.Config) HTTPOption {
	return func(h *httpAPI) { h.outTLS = conf }
}

// Limits of the log stream.
const (
	logFrameBytes     = 64 << 10
	logHeartbeatEvery = 10 * time.Second
)

// logFrame is one frame of a framed log stream, Nomad's StreamFrame:
// Data is base64 in JSON. A frame with no fields is a heartbeat.
type logFrame struct {
	Offset int64  `json:",omitempty"`
	Data   []byte `json:",omitempty"`
	File   string `json:",omitempty"`
}

// logsProxiedHeader marks a log request that one agent passed to
// another; an agent never passes such a request on again, so a request is
// proxied at most once whatever the agents believe about each other.
const logsProxiedHeader = "X-Drover-Logs-Proxied-By"

// logParams are the query parameters of a log request.
type logParams struct {
	task, logType string
	follow, plain bool
	offset        int64
	skip          int // bytes of the stream to drop (origin=end with no offset)
}

// parseLogParams reads ?task=&type=&follow=&plain=&offset=&origin=.
func parseLogParams(r *http.Request) (*logParams, error) {
	q := r.URL.Query()
	p := &logParams{task: q.Get("task"), logType: q.Get("type")}
	if p.task == "" {
		return nil, badRequest("Missing task: give ?task=<name>")
	}
	if p.logType == "" {
		p.logType = "stdout"
	}
	var err error
	if p.follow, err = boolParam(r, "follow"); err != nil {
		return nil, err
	}
	if p.plain, err = boolParam(r, "plain"); err != nil {
		return nil, err
	}
	if s := q.Get("offset"); s != "" {
		if p.offset, err = strconv.ParseInt(s, 10, 64); err != nil || p.offset < 0 {
			return nil, badRequest("Invalid offset %q: must be a non-negative integer", s)
		}
	}
	switch origin := q.Get("origin"); origin {
	case "", "start":
	case "end":
		// The client counts back from the end with a negative offset; 0
		// from the end is "one byte back, then drop it".
		if p.offset == 0 {
			p.offset, p.skip = 1, 1
		}
		p.offset = -p.offset
	default:
		return nil, badRequest("Invalid origin %q: want start or end", origin)
	}
	return p, nil
}

// GET /v1/client/fs/logs/<alloc>?task=&type=stdout|stderr&follow=&origin=start|end&offset=&plain=:
// a task's log. With plain=true the bytes are sent as they are; otherwise
// as a stream of JSON frames (Nomad's shape).
//
// Any agent answers: when its own client does not hold the allocation (or
// it runs no client), it looks the allocation's node up through the
// servers and reverse-proxies the request, streaming, to that node's HTTP
// address (Node.HTTPAddr, which clients report). A proxied request
// carries logsProxiedHeader and is never proxied again.
func (h *httpAPI) clientLogs(w http.ResponseWriter, r *http.Request) (any, error) {
	p, err := parseLogParams(r)
	if err != nil {
		return nil, err
	}
	allocID := r.PathValue("alloc")
	if err := h.authorizeLogs(r, allocID); err != nil {
		return nil, err
	}
	var localErr error = structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this agent, which runs no client", allocID)
	if h.client != nil {
		rc, err := h.client.TaskLogs(allocID, p.task, p.logType, p.follow, p.offset)
		if err == nil {
			h.serveLog(w, r, rc, p)
			return nil, nil
		}
		if !errors.Is(err, structs.ErrNotFound) {
			return nil, err
		}
		localErr = err
	}
	if r.Header.Get(logsProxiedHeader) != "" {
		return nil, localErr
	}
	var secret string
	if h.cfg.ACL.Enabled {
		secret = requestSecret(r)
	}
	target, err := h.allocNodeURL(allocID, secret)
	if err != nil {
		return nil, err
	}
	if target == nil { // the allocation is on this agent's own node
		return nil, localErr
	}
	h.proxyLogs(w, r, target, p.follow)
	return nil, nil
}

// authorizeLogs checks read-logs in the allocation's namespace, which
// it reads through the servers with the caller's token (so Drover also
// needs read-job there, which Nomad's logs endpoint does not).
func (h *httpAPI) authorizeLogs(r *http.Request, allocID string) error {
	return h.authorizeAlloc(r, allocID, acl.NamespaceCapabilityReadLogs)
}

// authorizeAlloc checks capability in the allocation's namespace, read
// through the servers with the caller's token.
func (h *httpAPI) authorizeAlloc(r *http.Request, allocID, capability string) error {
	if !h.cfg.ACL.Enabled {
		return nil
	}
	a, err := h.resolveACL(requestSecret(r))
	if err != nil {
		return err
	}
	var ar structs.SingleAllocResponse
	args := structs.AllocSpecificRequest{AllocID: allocID, QueryOptions: structs.QueryOptions{AllowStale: true, AuthToken: requestSecret(r)}}
	if err := h.srv.RPC("Alloc.GetAlloc", &args, &ar); err != nil {
		return err
	}
	if ar.Alloc == nil {
		return structs.NewError(structs.ErrCodeNotFound, "allocation %q not found", allocID)
	}
	if !a.AllowNamespaceOperation(ar.Alloc.Namespace, capability) {
		return structs.ErrPermissionDenied
	}
	return nil
}

// serveLog streams rc (which it closes) as the response.
func (h *httpAPI) serveLog(w http.ResponseWriter, r *http.Request, rc io.ReadCloser, p *logParams) {
	defer rc.Close()
	if p.follow {
		// A followed log outlives any write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	if p.plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	// Send the headers now: a quiet followed log may not write for long.
	_ = http.NewResponseController(w).Flush()
	file := fmt.Sprintf("alloc/logs/%s.%s", p.task, p.logType)
	h.streamLog(w, r, rc, p.plain, file, p.skip)
}

// allocNodeURL returns the base URL of the HTTP API of the node holding
// the allocation, or nil when that is this agent's own node. The reads
// may be served by any server (stale).
func (h *httpAPI) allocNodeURL(allocID, secret string) (*url.URL, error) {
	stale := structs.QueryOptions{AllowStale: true, AuthToken: secret}
	var ar structs.SingleAllocResponse
	if err := h.srv.RPC("Alloc.GetAlloc", &structs.AllocSpecificRequest{AllocID: allocID, QueryOptions: stale}, &ar); err != nil {
		return nil, err
	}
	if ar.Alloc == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found", allocID)
	}
	if h.client != nil && ar.Alloc.NodeID == h.client.NodeID() {
		return nil, nil
	}
	var nr structs.SingleNodeResponse
	if err := h.srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: ar.Alloc.NodeID, QueryOptions: stale}, &nr); err != nil {
		return nil, err
	}
	if nr.Node == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "node %q of allocation %q not found", ar.Alloc.NodeID, allocID)
	}
	return nodeHTTPURL(nr.Node)
}

// nodeHTTPURL is the base URL of a node's HTTP API. A node bound to an
// unspecified address (0.0.0.0, [::]) is reached at its fingerprinted IP.
func nodeHTTPURL(n *structs.Node) (*url.URL, error) {
	host, port, err := net.SplitHostPort(n.HTTPAddr)
	if n.HTTPAddr == "" || err != nil {
		return nil, structs.NewError(structs.ErrCodeInternal, "node %q reports no usable HTTP address (%q)", n.ID, n.HTTPAddr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = n.Attributes["unique.network.ip-address"]
		if host == "" {
			return nil, structs.NewError(structs.ErrCodeInternal,
				"node %q listens on %q and reports no IP address to reach it at", n.ID, n.HTTPAddr)
		}
	}
	scheme := "http"
	if n.TLSEnabled {
		scheme = "https"
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, nil
}

// proxyLogs passes the request to the agent at target and streams its
// answer back as it comes (each write is flushed at once, so a followed
// log is not held in a buffer).
func (h *httpAPI) proxyLogs(w http.ResponseWriter, r *http.Request, target *url.URL, follow bool) {
	if follow {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(logsProxiedHeader, h.cfg.NodeNameOrHost())
		},
		FlushInterval: -1,
		Transport:     h.proxyTransport(),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.logger.Warn("proxying a log request failed", "target", target.Host, "path", r.URL.Path, "error", err)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = fmt.Fprintf(w, "reaching the allocation's node at %s: %v", target.Host, err)
		},
	}
	h.logger.Debug("proxying a log request", "target", target.Host, "path", r.URL.Path)
	proxy.ServeHTTP(w, r)
}

// proxyTransport is the transport of log proxying: the default one, with
// this agent's TLS when it has TLS.
func (h *httpAPI) proxyTransport() http.RoundTripper {
	if h.outTLS == nil {
		return http.DefaultTransport
	}
	h.proxyOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = h.outTLS
		h.proxyTLSTransport = t
	})
	return h.proxyTLSTransport
}

// streamLog copies rc to w until it ends or the request is cancelled,
// flushing each chunk; framed streams get a heartbeat frame when a
// followed log is quiet.
func (h *httpAPI) streamLog(w http.ResponseWriter, r *http.Request, rc io.ReadCloser, plain bool, file string, skip int) {
	type chunk struct {
		data []byte
		err  error
	}
	chunks := make(chan chunk)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			buf := make([]byte, logFrameBytes)
			n, err := rc.Read(buf)
			select {
			case chunks <- chunk{buf[:n], err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	rcw := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	heartbeat := time.NewTicker(logHeartbeatEvery)
	defer heartbeat.Stop()
	var offset int64
	for {
		select {
		case <-r.Context().Done():
			_ = rc.Close() // unblocks the reader
			return
		case <-heartbeat.C:
			if !plain {
				if err := enc.Encode(logFrame{}); err != nil {
					return
				}
				_ = rcw.Flush()
			}
		case c := <-chunks:
			data := c.data
			if skip > 0 {
				n := min(skip, len(data))
				data, skip = data[n:], skip-n
			}
			if len(data) > 0 {
				var err error
				if plain {
					_, err = w.Write(data)
				} else {
					err = enc.Encode(logFrame{Offset: offset, Data: data, File: file})
				}
				if err != nil {
					return
				}
				offset += int64(len(data))
				_ = rcw.Flush()
			}
			if c.err != nil {
				if !errors.Is(c.err, io.EOF) {
					h.logger.Warn("log stream ended", "file", file, "error", c.err)
				}
				return
			}
		}
	}
}

package agent

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// Limits of the HTTP API.
const (
	// MaxRequestBodyBytes bounds every request body; larger bodies get 413
	// and are never decoded.
	MaxRequestBodyBytes = 1 << 20
	// DefaultBlockingWait is a blocking query's wait when ?wait is absent.
	DefaultBlockingWait = 5 * time.Minute
	// MaxBlockingWait caps ?wait.
	MaxBlockingWait = 10 * time.Minute

	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 30 * time.Second
	// httpWriteTimeout bounds ordinary responses; blocking queries extend
	// their own write deadline past their wait.
	httpWriteTimeout   = 2 * time.Minute
	httpIdleTimeout    = 2 * time.Minute
	httpMaxHeaderBytes = 64 << 10
	// blockingWriteSlack is added to a blocking query's wait for its write
	// deadline: server-side jitter plus the time to encode the answer.
	blockingWriteSlack = time.Minute
)

// Headers Nomad's clients read.
const (
	headerIndex       = "X-Nomad-Index"
	headerKnownLeader = "X-Nomad-KnownLeader"
	headerLastContact = "X-Nomad-LastContact"
)

// Server is what the HTTP API needs from the server; *server.Server
// satisfies it. RPC gets the same routing (forwarding to the leader,
// blocking queries) as a remote call and returns typed errors.
type Server interface {
	RPC(method string, args, reply any) error
	Leader() string
	IsLeader() bool
	RPCAddr() string
	Members() []*structs.ServerMember
}

// httpAPI serves Drover's (Nomad-compatible) HTTP API. It holds no mutable
// state: every request is an RPC to the server.
type httpAPI struct {
	srv     Server
	cfg     *Config // read only
	logger  hclog.Logger
	metrics *telemetry
	client  LocalClient // nil when the agent runs no client
	acls    agentACLs   // agent-local ACL checks (http_acl.go)
	// outTLS, if set, is the TLS of requests this agent makes to other
	// agents' HTTPS APIs (log proxying).
	outTLS            *tls.Config
	proxyOnce         sync.Once
	proxyTLSTransport http.RoundTripper // built once from outTLS
}

// handlerFunc answers one request with a value to encode as JSON, or an
// error that wrap maps to a status code and a plain-text body.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

// newHTTPServer returns an http.Server with the API's timeouts and a cap
// of DefaultMaxConnsPerClient open connections per client address.
func newHTTPServer(handler http.Handler, logger hclog.Logger) *http.Server {
	return newHTTPServerWithLimit(handler, logger, DefaultMaxConnsPerClient)
}

// newHTTPServerWithLimit is newHTTPServer with another cap; 0 means none
// (limits { http_max_conns_per_client = 0 }).
func newHTTPServerWithLimit(handler http.Handler, logger hclog.Logger, maxConnsPerClient int) *http.Server {
	return &http.Server{
		ConnState:         connLimitHook(maxConnsPerClient, logger),
		Handler:           handler,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// withStatus is a handler result sent as JSON with a status other than 200.
type withStatus struct {
	code int
	body any
}

// httpError is an error with an explicit HTTP status, for problems found
// before any RPC (bad parameters, bad bodies).
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(msg string) error { return &httpError{code: http.StatusNotFound, msg: msg} }

// errorResponse maps err to a status code and a plain-text body, as the
// brief's error conventions say.
func errorResponse(err error) (int, string) {
	var he *httpError
	if errors.As(err, &he) {
		return he.code, he.msg
	}
	var ve *structs.ValidationError
	if errors.As(err, &ve) {
		return http.StatusBadRequest, strings.Join(ve.Messages(), "\n")
	}
	msg := err.Error()
	var se *structs.Error
	if errors.As(err, &se) {
		msg = se.Message
	}
	switch structs.CodeOf(err) {
	case structs.ErrCodeInvalid, structs.ErrCodeTooLarge:
		return http.StatusBadRequest, msg
	case structs.ErrCodeNotFound:
		return http.StatusNotFound, msg
	case structs.ErrCodeConflict:
		return http.StatusConflict, msg
	case structs.ErrCodeNoLeader:
		return http.StatusInternalServerError, structs.ErrNoLeader.Message
	case structs.ErrCodeUnsupported:
		return http.StatusNotImplemented, msg
	case structs.ErrCodePermissionDenied, structs.ErrCodeTokenNotFound:
		return http.StatusForbidden, msg
	case structs.ErrCodeDiskFull:
		return http.StatusInsufficientStorage, msg
	case structs.ErrCodeOutcomeUnknown:
		return http.StatusGatewayTimeout, msg
	}
	return http.StatusInternalServerError, msg
}

// wrap turns a handlerFunc into an http.Handler: JSON on success, a plain
// text error otherwise, and one debug log line per request.
func (h *httpAPI) wrap(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		out, err := fn(w, r)
		code := http.StatusOK
		if err != nil {
			var msg string
			code, msg = errorResponse(err)
			if code >= 500 {
				h.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, msg)
		} else if ws, ok := out.(withStatus); ok {
			code = h.writeJSON(w, r, ws.code, ws.body)
		} else if out != nil {
			code = h.writeJSON(w, r, code, out)
		}
		h.logger.Debug("request complete", "method", r.Method, "path", r.URL.Path,
			"status", code, "duration", time.Since(start))
	})
}

// writeJSON encodes out with status code (Nomad's ?pretty indents it) and
// returns the status actually sent.
func (h *httpAPI) writeJSON(w http.ResponseWriter, r *http.Request, code int, out any) int {
	var buf []byte
	var err error
	if _, pretty := r.URL.Query()["pretty"]; pretty {
		buf, err = json.MarshalIndent(out, "", "    ")
	} else {
		buf, err = json.Marshal(out)
	}
	if err != nil {
		h.logger.Error("failed to encode response", "path", r.URL.Path, "error", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "failed to encode response: "+err.Error())
		return http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf)
	return code
}

// parseQuery fills q from the request's query parameters: region,
// namespace, stale, prefix, and the blocking pair index/wait. A blocking
// query's write deadline is extended past its wait.
func (h *httpAPI) parseQuery(w http.ResponseWriter, r *http.Request, q *structs.QueryOptions) error {
	v := r.URL.Query()
	region, err := h.parseRegion(r)
	if err != nil {
		return err
	}
	q.Region = region
	if h.cfg.ACL.Enabled {
		q.AuthToken = requestSecret(r)
	}
	q.Namespace = v.Get("namespace")
	q.Prefix = v.Get("prefix")
	if v.Get("filter") != "" {
		return structs.NewError(structs.ErrCodeUnsupported, "Drover does not support filter expressions (?filter=); use ?prefix=")
	}
	if s, ok := v["stale"]; ok {
		switch s[0] {
		case "", "true":
			q.AllowStale = true
		case "false":
		default:
			return badRequest("Invalid stale value %q: want true or false", s[0])
		}
	}
	if s := v.Get("index"); s != "" {
		idx, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return badRequest("Invalid index %q: must be a non-negative integer", s)
		}
		q.MinQueryIndex = idx
	}
	q.MaxQueryTime = DefaultBlockingWait
	if s := v.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return badRequest("Invalid wait time %q: want a duration such as 30s or 5000ms", s)
		}
		q.MaxQueryTime = min(d, MaxBlockingWait)
	}
	if q.MinQueryIndex > 0 {
		// Best effort: a ResponseWriter that cannot move its deadline (a
		// test recorder) keeps the server's.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(q.MaxQueryTime + blockingWriteSlack))
		// A client that disconnects ends the wait (when this agent's
		// server serves it) instead of leaving it to its timeout.
		q.WithContext(r.Context())
	}
	return nil
}

// parseWrite fills a write request's region and namespace.
func (h *httpAPI) parseWrite(r *http.Request, wr *structs.WriteRequest) error {
	region, err := h.parseRegion(r)
	if err != nil {
		return err
	}
	wr.Region = region
	if h.cfg.ACL.Enabled {
		wr.AuthToken = requestSecret(r)
	}
	wr.Namespace = r.URL.Query().Get("namespace")
	return nil
}

// parseRegion returns ?region= or the agent's region. Drover has one
// region per cluster, so another region is an error.
func (h *httpAPI) parseRegion(r *http.Request) (string, error) {
	region := r.URL.Query().Get("region")
	if region == "" {
		return h.cfg.Region, nil
	}
	if region != h.cfg.Region {
		return "", badRequest("No path to region %q: this cluster serves region %q", region, h.cfg.Region)
	}
	return region, nil
}

// setMeta writes the query metadata headers. An index of 0 is sent as 1 so
// a client blocking on it never spins (as Nomad does).
func setMeta(w http.ResponseWriter, m *structs.QueryMeta) {
	setIndex(w, m.Index)
	w.Header().Set(headerKnownLeader, strconv.FormatBool(m.KnownLeader))
	w.Header().Set(headerLastContact, strconv.FormatInt(m.LastContact.Milliseconds(), 10))
}

func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set(headerIndex, strconv.FormatUint(max(index, 1), 10))
}

// decodeBody reads one JSON value from the request body into out, limited
// to MaxRequestBodyBytes. Fields out does not have are ignored (Nomad's
// client sends many Drover does not model); values of the wrong type are
// rejected with the field named. Bodies that carry a job are read with
// decodeJobBody instead, which ignores nothing.
func decodeBody(w http.ResponseWriter, r *http.Request, out any) error {
	return readBody(w, r, func(dec *json.Decoder) error { return dec.Decode(out) })
}

// decodeJobBody reads a body holding a job in Nomad's shape into out (a
// *structs.JobRegisterHTTPRequest or *structs.JobPlanHTTPRequest) with
// jobspec.DecodeAPIRequest: a field Drover does not act on is a 400 naming
// it, and the defaults Nomad's server gives null fields are applied.
func decodeJobBody(w http.ResponseWriter, r *http.Request, out any) error {
	var top map[string]any
	err := readBody(w, r, func(dec *json.Decoder) error {
		dec.UseNumber()
		return dec.Decode(&top)
	})
	if err != nil {
		return err
	}
	if top == nil {
		return badRequest("Request body must be a JSON object")
	}
	return jobspec.DecodeAPIRequest(top, out)
}

// readBody runs decode over the request body, limited to
// MaxRequestBodyBytes, and checks that nothing follows the one value.
func readBody(w http.ResponseWriter, r *http.Request, decode func(*json.Decoder) error) error {
	if r.ContentLength > MaxRequestBodyBytes {
		// Declared too large: refuse without reading it.
		return bodyError(&http.MaxBytesError{Limit: MaxRequestBodyBytes})
	}
	body := http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes)
	dec := json.NewDecoder(body)
	if err := decode(dec); err != nil {
		return bodyError(err)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return bodyError(err)
	}
	return badRequest("Request body must hold exactly one JSON object; found more after it")
}

func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return &httpError{code: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("Request body too large: the limit is %d bytes", tooLarge.Limit)}
	case errors.Is(err, io.EOF):
		return badRequest("Request body is empty; expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("Invalid JSON: unexpected end of the request body")
	case errors.As(err, &syntax):
		return badRequest("Invalid JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "request body"
		}
		return badRequest("Invalid value for %s: expected %s, got JSON %s", field, jsonTypeName(typeErr.Type.String()), typeErr.Value)
	}
	return badRequest("Failed to decode request body: %v", err)
}

// jsonTypeName describes a Go type in JSON terms for error messages.
func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "structs."), strings.HasPrefix(goType, "*structs."):
		return "an object"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case goType == "time.Duration":
		return "an integer (nanoseconds)"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return goType
}

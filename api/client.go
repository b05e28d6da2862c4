package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultAddress is the agent address used when none is configured.
const DefaultAddress = "http://127.0.0.1:4646"

// maxErrorBody bounds how much of an error response is kept.
const maxErrorBody = 64 << 10

// maxConflictBody bounds a 409's body, which may hold a whole variable
// (items up to 64 KiB, JSON-escaped).
const maxConflictBody = 1 << 20

// AddressFromEnv returns DROVER_ADDR, else NOMAD_ADDR, else
// DefaultAddress. getenv is os.Getenv outside tests.
func AddressFromEnv(getenv func(string) string) string {
	for _, k := range []string{"DROVER_ADDR", "NOMAD_ADDR"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return DefaultAddress
}

// Client calls one agent's HTTP API. The zero HTTPClient means
// http.DefaultClient. A Client is safe for concurrent use.
type Client struct {
	// Address is the agent's base URL, e.g. http://127.0.0.1:4646; a bare
	// host:port is taken as http.
	Address    string
	HTTPClient *http.Client
	// Token is the ACL secret sent as X-Nomad-Token ("" for none).
	Token string
}

// TokenFromEnv returns DROVER_TOKEN, else NOMAD_TOKEN ("" for none).
func TokenFromEnv(getenv func(string) string) string {
	for _, k := range []string{"DROVER_TOKEN", "NOMAD_TOKEN"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// NewClient returns a client for the agent at address.
func NewClient(address string) *Client { return &Client{Address: address} }

// StatusError is a response with a status other than 2xx. Body is the
// agent's plain-text message.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("Unexpected response code: %d (%s)", e.Code, strings.TrimSpace(e.Body))
}

// IsNotFound reports whether err is a 404 from the agent.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

// QueryOptions are the parameters common to reads.
type QueryOptions struct {
	Region    string
	Namespace string
	Prefix    string
	// AllowStale lets any server answer from its local state.
	AllowStale bool
	// WaitIndex makes the read blocking: it returns once the data's index
	// exceeds WaitIndex, or after WaitTime (server default 5m, max 10m).
	WaitIndex uint64
	WaitTime  time.Duration
	// PerPage and NextToken page through lists; the response's
	// QueryMeta.NextToken is the token of the next page ("" on the last).
	PerPage   int
	NextToken string
	// Params are extra query parameters (e.g. "job" and "status" for
	// evaluation lists).
	Params map[string]string
}

// QueryMeta is what a read's response headers say.
type QueryMeta struct {
	LastIndex   uint64
	LastContact time.Duration
	KnownLeader bool
	NextToken   string
}

// WriteOptions are the parameters common to writes.
type WriteOptions struct {
	Region    string
	Namespace string
}

// WriteMeta is what a write's response headers say.
type WriteMeta struct {
	LastIndex uint64
}

func (q *QueryOptions) values() url.Values {
	v := url.Values{}
	if q == nil {
		return v
	}
	if q.Region != "" {
		v.Set("region", q.Region)
	}
	if q.Namespace != "" {
		v.Set("namespace", q.Namespace)
	}
	if q.Prefix != "" {
		v.Set("prefix", q.Prefix)
	}
	if q.AllowStale {
		v.Set("stale", "")
	}
	if q.WaitIndex != 0 {
		v.Set("index", strconv.FormatUint(q.WaitIndex, 10))
	}
	if q.WaitTime != 0 {
		v.Set("wait", strconv.FormatInt(q.WaitTime.Milliseconds(), 10)+"ms")
	}
	if q.PerPage > 0 {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	if q.NextToken != "" {
		v.Set("next_token", q.NextToken)
	}
	for k, val := range q.Params {
		v.Set(k, val)
	}
	return v
}

func (w *WriteOptions) values() url.Values {
	v := url.Values{}
	if w == nil {
		return v
	}
	if w.Region != "" {
		v.Set("region", w.Region)
	}
	if w.Namespace != "" {
		v.Set("namespace", w.Namespace)
	}
	return v
}

func (c *Client) baseURL() (*url.URL, error) {
	addr := strings.TrimRight(c.Address, "/")
	if addr == "" {
		addr = DefaultAddress
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("invalid agent address %q: %w", c.Address, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid agent address %q: scheme must be http or https", c.Address)
	}
	return u, nil
}

// do sends one request and returns the response when its status is 2xx;
// otherwise a *StatusError. in, when not nil, is sent as JSON.
func (c *Client) do(ctx context.Context, method, path string, params url.Values, in any) (*http.Response, error) {
	if in == nil {
		return c.doRaw(ctx, method, path, params, nil, "")
	}
	buf, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	return c.doRaw(ctx, method, path, params, bytes.NewReader(buf), "application/json")
}

// doRaw sends body (may be nil) with the given content type and returns
// the response, or a *StatusError for a status other than 2xx.
func (c *Client) doRaw(ctx context.Context, method, path string, params url.Values, body io.Reader, contentType string) (*http.Response, error) {
	u, err := c.baseURL()
	if err != nil {
		return nil, err
	}
	// path arrives escaped (ids go through url.PathEscape).
	raw := strings.TrimRight(u.EscapedPath(), "/") + path
	if u.Path, err = url.PathUnescape(raw); err != nil {
		return nil, fmt.Errorf("invalid request path %q: %w", path, err)
	}
	u.RawPath = raw
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("X-Nomad-Token", c.Token)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		limit := int64(maxErrorBody)
		if resp.StatusCode == http.StatusConflict {
			limit = maxConflictBody // a variable write's conflict carries the variable
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
		resp.Body.Close()
		return nil, &StatusError{Code: resp.StatusCode, Body: string(msg)}
	}
	return resp, nil
}

// query GETs path and decodes the JSON answer into out.
func (c *Client) query(ctx context.Context, path string, q *QueryOptions, out any) (*QueryMeta, error) {
	resp, err := c.do(ctx, http.MethodGet, path, q.values(), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	qm := parseQueryMeta(resp.Header)
	if err := decode(resp, out); err != nil {
		return nil, err
	}
	return qm, nil
}

// write sends in (may be nil) with method and decodes the answer into out
// (may be nil).
func (c *Client) write(ctx context.Context, method, path string, params url.Values, w *WriteOptions, in, out any) (*WriteMeta, error) {
	v := w.values()
	for k, vals := range params {
		v[k] = vals
	}
	resp, err := c.do(ctx, method, path, v, in)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64)
	if out != nil {
		if err := decode(resp, out); err != nil {
			return nil, err
		}
	}
	return &WriteMeta{LastIndex: idx}, nil
}

func decode(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding response from %s: %w", resp.Request.URL.Path, err)
	}
	return nil
}

// parseQueryMeta reads the X-Nomad-* headers; absent ones stay zero.
func parseQueryMeta(h http.Header) *QueryMeta {
	qm := &QueryMeta{}
	qm.LastIndex, _ = strconv.ParseUint(h.Get("X-Nomad-Index"), 10, 64)
	if ms, err := strconv.ParseInt(h.Get("X-Nomad-LastContact"), 10, 64); err == nil {
		qm.LastContact = time.Duration(ms) * time.Millisecond
	}
	qm.KnownLeader = h.Get("X-Nomad-KnownLeader") == "true"
	qm.NextToken = h.Get("X-Nomad-NextToken")
	return qm
}

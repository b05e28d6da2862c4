// Package nomadtest is a fake of the two read endpoints of Nomad's HTTP
// API that templates use, for tests only.
package nomadtest

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server serves the two read endpoints consul-template's Nomad
// functions use, in Nomad's JSON shapes and with Nomad's blocking-query
// semantics: every answer carries X-Nomad-Index, and a request with
// ?index=N waits until what it reads changes past N (or its wait ends).
//
//	GET /v1/var/<path>      Variable, or 404 when there is none
//	GET /v1/vars?prefix=p   []VariableMetadata under the prefix
//	GET /v1/service/<name>  []ServiceRegistration
//	GET /v1/services        []ServiceRegistrationListStub (one namespace)
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	index    uint64
	changed  chan struct{} // closed at every change; guarded by mu
	vars     map[string]map[string]string
	varIdx   map[string]uint64
	services map[string][]Service
	svcIdx   map[string]uint64
	tokens   []string // X-Nomad-Token of every request
	closing  bool
}

// Service is one registration of a service.
type Service struct {
	Address string
	Port    int
	Tags    []string
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server { return start(t, false) }

// NewTLS starts an HTTPS server; CAFile is the PEM file of its
// certificate (which names 127.0.0.1).
func NewTLS(t testing.TB) (*Server, string) {
	f := start(t, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return f, ca
}

func start(t testing.TB, tls bool) *Server {
	f := &Server{index: 10, changed: make(chan struct{}), vars: map[string]map[string]string{},
		varIdx: map[string]uint64{}, services: map[string][]Service{}, svcIdx: map[string]uint64{}}
	if tls {
		f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	} else {
		f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	}
	t.Cleanup(func() {
		f.mu.Lock()
		f.closing = true
		close(f.changed) // wake blocked queries, which then answer
		f.changed = make(chan struct{})
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

// Addr is the server's URL.
func (f *Server) Addr() string { return f.srv.URL }

// SetVar writes a variable's items, as PUT /v1/var/<path> would.
func (f *Server) SetVar(path string, items map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	f.vars[path] = items
	f.varIdx[path] = f.index
	close(f.changed)
	f.changed = make(chan struct{})
}

// SetService replaces a service's registrations.
func (f *Server) SetService(name string, regs ...Service) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	f.services[name] = regs
	f.svcIdx[name] = f.index
	close(f.changed)
	f.changed = make(chan struct{})
}

// Tokens returns the X-Nomad-Token of every request so far.
func (f *Server) Tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.tokens = append(f.tokens, r.Header.Get("X-Nomad-Token"))
	f.mu.Unlock()
	min, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait := 5 * time.Second
	if d, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && d < wait {
		wait = d
	}
	deadline := time.After(wait)
	for {
		f.mu.Lock()
		idx, body, found := f.read(r.URL.Path, r.URL.Query().Get("prefix"))
		ch, closing := f.changed, f.closing
		f.mu.Unlock()
		if idx > min || min == 0 || closing {
			w.Header().Set("X-Nomad-Index", strconv.FormatUint(idx, 10))
			w.Header().Set("X-Nomad-KnownLeader", "true")
			w.Header().Set("X-Nomad-LastContact", "0")
			if !found {
				http.Error(w, "variable not found", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(body)
			return
		}
		select {
		case <-ch:
		case <-deadline:
			min = 0 // answer with what there is
		case <-r.Context().Done():
			return
		}
	}
}

// read returns the index, body and presence of what path names; called
// with mu held.
func (f *Server) read(path, prefix string) (uint64, any, bool) {
	switch {
	case strings.HasPrefix(path, "/v1/var/"):
		p := strings.TrimPrefix(path, "/v1/var/")
		items, ok := f.vars[p]
		if !ok {
			return f.index, nil, false
		}
		idx := f.varIdx[p]
		return idx, map[string]any{"Namespace": "default", "Path": p, "CreateIndex": idx, "ModifyIndex": idx,
			"CreateTime": 1, "ModifyTime": 1, "Items": items}, true
	case path == "/v1/vars" || path == "/v1/vars/":
		out := []map[string]any{}
		for _, p := range sortedKeys(f.vars) {
			if strings.HasPrefix(p, prefix) {
				idx := f.varIdx[p]
				out = append(out, map[string]any{"Namespace": "default", "Path": p, "CreateIndex": idx,
					"ModifyIndex": idx, "CreateTime": 1, "ModifyTime": 1})
			}
		}
		return f.maxIndex(f.varIdx), out, true
	case path == "/v1/services":
		stubs := []map[string]any{}
		for _, name := range sortedKeys(f.services) {
			if len(f.services[name]) == 0 {
				continue
			}
			tags := []string{}
			for _, s := range f.services[name] {
				tags = append(tags, s.Tags...)
			}
			stubs = append(stubs, map[string]any{"ServiceName": name, "Tags": tags})
		}
		out := []map[string]any{}
		if len(stubs) > 0 {
			out = append(out, map[string]any{"Namespace": "default", "Services": stubs})
		}
		return f.maxIndex(f.svcIdx), out, true
	case strings.HasPrefix(path, "/v1/service/"):
		name := strings.TrimPrefix(path, "/v1/service/")
		idx := f.svcIdx[name]
		if idx == 0 {
			idx = f.index
		}
		out := []map[string]any{}
		for i, s := range f.services[name] {
			out = append(out, map[string]any{"ID": "_nomad-task-" + strconv.Itoa(i) + "-" + name, "ServiceName": name,
				"Namespace": "default", "NodeID": "node-1", "Datacenter": "dc1", "JobID": "web", "AllocID": "alloc-" + strconv.Itoa(i),
				"Tags": s.Tags, "Address": s.Address, "Port": s.Port, "CreateIndex": idx, "ModifyIndex": idx})
		}
		return idx, out, true
	}
	return f.index, nil, false
}

// maxIndex is the highest index of a table (the server's index when it
// is empty), as a Nomad list answers.
func (f *Server) maxIndex(idx map[string]uint64) uint64 {
	var m uint64
	for _, i := range idx {
		m = max(m, i)
	}
	if m == 0 {
		m = f.index
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

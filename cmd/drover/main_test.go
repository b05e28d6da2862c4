package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/version"
)

// syncBuffer is a bytes.Buffer safe for the agent's concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testNow is the clock of every test env: output with relative times is
// stable.
var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// testEnv returns an env with captured output and the given variables.
func testEnv(vars map[string]string) (*env, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	e := &env{
		stdout:      out,
		stderr:      errOut,
		stdin:       strings.NewReader(""),
		getenv:      func(k string) string { return vars[k] },
		now:         func() time.Time { return testNow },
		loc:         time.UTC,
		monitorWait: 2 * time.Second,
		signals: func() (<-chan os.Signal, func()) {
			return make(chan os.Signal), func() {}
		},
	}
	return e, out, errOut
}

func TestDispatch(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "no args", args: nil, wantCode: 1, wantStderr: "Usage: drover"},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStdout: "operator raft list-peers"},
		{name: "version", args: []string{"version"}, wantCode: 0, wantStdout: version.String() + "\n"},
		{name: "version flag", args: []string{"-version"}, wantCode: 0, wantStdout: version.String()},
		{name: "version rejects args", args: []string{"version", "x"}, wantCode: 1, wantStderr: "at most 0 argument"},
		{name: "unknown", args: []string{"frobnicate"}, wantCode: 1, wantStderr: "Unknown command: frobnicate"},
		{name: "group", args: []string{"operator"}, wantCode: 1, wantStderr: "Usage: drover operator <subcommand>"},
		{name: "group help", args: []string{"operator", "raft", "-h"}, wantCode: 0, wantStdout: "operator raft remove-peer"},
		{name: "unknown subcommand", args: []string{"operator", "raft", "nope"}, wantCode: 1,
			wantStderr: "Unknown command: drover operator raft nope"},
		{name: "command help", args: []string{"status", "-h"}, wantCode: 0, wantStderr: "-address"},
		{name: "bad flag", args: []string{"status", "-bogus"}, wantCode: 1, wantStderr: "flag provided but not defined"},
		{name: "agent help", args: []string{"agent", "-h"}, wantCode: 0, wantStderr: "-bootstrap-expect"},
		{name: "agent help is formatted like other verbs", args: []string{"agent", "-h"}, wantCode: 0,
			wantStderr: "Usage: drover agent [options]\n\nRun a Drover agent"},
		{name: "agent help lists options", args: []string{"agent", "-help"}, wantCode: 0, wantStderr: "\n\nOptions:\n\n  -bind"},
		{name: "misspelled verb", args: []string{"stauts"}, wantCode: 1, wantStderr: "Did you mean \"drover status\"?"},
		{name: "misspelled subcommand", args: []string{"job", "stauts", "web"}, wantCode: 1,
			wantStderr: "Unknown command: drover job stauts web\n\nDid you mean \"drover job status\"?"},
		{name: "misspelled nested subcommand", args: []string{"operator", "raft", "list-peer"}, wantCode: 1,
			wantStderr: "Did you mean \"drover operator raft list-peers\"?"},
		{name: "agent bad config", args: []string{"agent", "-server"}, wantCode: 1, wantStderr: "data_dir is required"},
		{name: "agent bad flag value", args: []string{"agent", "-dev", "-http-port", "x"}, wantCode: 1, wantStderr: "invalid value"},
		{name: "remove-peer needs a target", args: []string{"operator", "raft", "remove-peer"}, wantCode: 1,
			wantStderr: "exactly one of -peer-address or -peer-id"},
		{name: "transfer-leadership needs one target", args: []string{"operator", "raft", "transfer-leadership", "-peer-id", "a", "-peer-address", "b:1"},
			wantCode: 1, wantStderr: "exactly one of -peer-address or -peer-id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			code := run(tc.args, e)
			if code != tc.wantCode {
				t.Fatalf("exit = %d; want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errOut)
			}
			if !strings.Contains(out.String(), tc.wantStdout) {
				t.Fatalf("stdout %q does not contain %q", out, tc.wantStdout)
			}
			if !strings.Contains(errOut.String(), tc.wantStderr) {
				t.Fatalf("stderr %q does not contain %q", errOut, tc.wantStderr)
			}
		})
	}
}

// fakeAgent serves fixed JSON for the paths the CLI reads; a route whose
// value is an http.HandlerFunc is served by it.
func fakeAgent(t *testing.T, routes map[string]any) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if h, ok := v.(http.HandlerFunc); ok {
			h(w, r)
			return
		}
		if err, ok := v.(error); ok {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestStatus(t *testing.T) {
	ts := fakeAgent(t, map[string]any{
		"GET /v1/status/leader": "10.0.0.1:4647",
		"GET /v1/status/peers":  []string{"10.0.0.1:4647", "10.0.0.2:4647"},
	})
	want := "Leader  10.0.0.1:4647\n" +
		"Peers   10.0.0.1:4647\n" +
		"        10.0.0.2:4647\n"

	t.Run("address flag", func(t *testing.T) {
		e, out, errOut := testEnv(nil)
		if code := run([]string{"status", "-address", ts.URL}, e); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if out.String() != want {
			t.Fatalf("output:\n%s\nwant:\n%s", out, want)
		}
	})
	t.Run("DROVER_ADDR", func(t *testing.T) {
		e, out, errOut := testEnv(map[string]string{"DROVER_ADDR": ts.URL, "NOMAD_ADDR": "http://127.0.0.1:1"})
		if code := run([]string{"status"}, e); code != 0 || out.String() != want {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
	})
	t.Run("NOMAD_ADDR fallback", func(t *testing.T) {
		e, out, errOut := testEnv(map[string]string{"NOMAD_ADDR": ts.URL})
		if code := run([]string{"status"}, e); code != 0 || out.String() != want {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
	})
}

func TestStatusErrors(t *testing.T) {
	noLeader := fakeAgent(t, map[string]any{"GET /v1/status/leader": errString("No cluster leader")})
	e, _, errOut := testEnv(nil)
	if code := run([]string{"status", "-address", noLeader.URL}, e); code != 1 {
		t.Fatalf("exit = %d; want 1", code)
	}
	if !strings.Contains(errOut.String(), "Error querying leader: Unexpected response code: 500 (No cluster leader)") {
		t.Fatalf("stderr = %q", errOut)
	}

	e, _, errOut = testEnv(nil)
	if code := run([]string{"status", "-address", "http://127.0.0.1:1"}, e); code != 1 || !strings.Contains(errOut.String(), "Error querying leader") {
		t.Fatalf("unreachable agent: exit %d, stderr %q", code, errOut)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestRaftListPeers(t *testing.T) {
	ts := fakeAgent(t, map[string]any{
		"GET /v1/operator/raft/configuration": structs.RaftConfigurationResponse{Index: 5, Servers: []*structs.RaftServer{
			{ID: "0b4a2f6e-1111-2222-3333-444455556666", Node: "s1.global", Address: "10.0.0.1:4647", Leader: true, Voter: true, RaftProtocol: "3"},
			{ID: "9c1d", Node: "server-two.global", Address: "10.0.0.22:4647", Voter: false, RaftProtocol: "3"},
		}},
	})
	e, out, errOut := testEnv(nil)
	if code := run([]string{"operator", "raft", "list-peers", "-address", ts.URL}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "" +
		"Node               ID                                    Address         State     Voter  RaftProtocol\n" +
		"s1.global          0b4a2f6e-1111-2222-3333-444455556666  10.0.0.1:4647   leader    true   3\n" +
		"server-two.global  9c1d                                  10.0.0.22:4647  follower  false  3\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestClosestCommand(t *testing.T) {
	top := nextWords(commands(), "")
	cases := []struct{ typed, want string }{
		{"stauts", "status"}, // swapped letters
		{"statu", "status"},  // unique prefix
		{"jbo", "job"},       // one swap
		{"nod", "node"},      // unique prefix
		{"alloc", "alloc"},   // exact
		{"no", "node"},       // unique two-letter prefix
		{"s", ""},            // one letter: too short to guess
		{"frobnicate", ""},   // nothing close
		{"xyz", ""},          // distance 3
		{"evl", "eval"},      // one insertion
		{"sytsem", "system"}, // swap
		{"oprator", "operator"},
	}
	for _, tc := range cases {
		if got := closest(tc.typed, top); got != tc.want {
			t.Errorf("closest(%q) = %q; want %q", tc.typed, got, tc.want)
		}
	}
	// An unknown word gets no suggestion, only the usage.
	e, _, errOut := testEnv(nil)
	if code := run([]string{"frobnicate"}, e); code != 1 || strings.Contains(errOut.String(), "Did you mean") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestStatusJSON(t *testing.T) {
	ts := fakeAgent(t, map[string]any{
		"GET /v1/status/leader": "10.0.0.1:4647",
		"GET /v1/status/peers":  []string{"10.0.0.1:4647", "10.0.0.2:4647"},
	})
	e, out, errOut := testEnv(nil)
	if code := run([]string{"status", "-json", "-address", ts.URL}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Leader string
		Peers  []string
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got.Leader != "10.0.0.1:4647" || len(got.Peers) != 2 {
		t.Fatalf("status -json = %q (%v)", out, err)
	}
}

func TestRaftListPeersJSON(t *testing.T) {
	want := structs.RaftConfigurationResponse{Index: 5, Servers: []*structs.RaftServer{
		{ID: "0b4a2f6e", Node: "s1.global", Address: "10.0.0.1:4647", Leader: true, Voter: true, RaftProtocol: "3"}}}
	ts := fakeAgent(t, map[string]any{"GET /v1/operator/raft/configuration": want})
	e, out, errOut := testEnv(nil)
	if code := run([]string{"operator", "raft", "list-peers", "-json", "-address", ts.URL}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got structs.RaftConfigurationResponse
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got.Index != 5 || len(got.Servers) != 1 ||
		*got.Servers[0] != *want.Servers[0] {
		t.Fatalf("list-peers -json = %q (%v)", out, err)
	}
}

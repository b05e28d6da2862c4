package agent

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// fakeClient serves one task's log from a string.
type fakeClient struct {
	log  string
	args []any // the last TaskLogs call
}

func (c *fakeClient) NodeID() string { return "node-1" }

func (c *fakeClient) TaskLogs(allocID, task, logType string, follow bool, offset int64) (io.ReadCloser, error) {
	c.args = []any{allocID, task, logType, follow, offset}
	if allocID != "a1" || task != "t" {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this client", allocID)
	}
	s := c.log
	switch {
	case offset >= 0:
		s = s[min(int(offset), len(s)):]
	default:
		s = s[max(len(s)+int(offset), 0):]
	}
	return io.NopCloser(strings.NewReader(s)), nil
}

func TestHTTPClientLogs(t *testing.T) {
	fc := &fakeClient{log: "hello\nworld\n"}
	cfg := DefaultConfig()
	// The servers know no allocation "zz" either, so it is not routed.
	servers := newFake().on("Alloc.GetAlloc", func(_, reply any) error { return nil })
	h := NewHTTPHandler(servers, cfg, hclog.NewNullLogger(), WithLocalClient(fc))

	cases := []struct {
		name     string
		target   string
		wantCode int
		wantBody string
		wantArgs []any
	}{
		{name: "plain", target: "/v1/client/fs/logs/a1?task=t&plain=true", wantCode: 200, wantBody: "hello\nworld\n",
			wantArgs: []any{"a1", "t", "stdout", false, int64(0)}},
		{name: "plain from the end", target: "/v1/client/fs/logs/a1?task=t&plain=true&origin=end&offset=6&type=stderr",
			wantCode: 200, wantBody: "world\n", wantArgs: []any{"a1", "t", "stderr", false, int64(-6)}},
		{name: "end with no offset is nothing yet", target: "/v1/client/fs/logs/a1?task=t&plain=true&origin=end",
			wantCode: 200, wantBody: "", wantArgs: []any{"a1", "t", "stdout", false, int64(-1)}},
		{name: "missing task", target: "/v1/client/fs/logs/a1?plain=true", wantCode: 400, wantBody: "Missing task"},
		{name: "unknown alloc", target: "/v1/client/fs/logs/zz?task=t", wantCode: 404, wantBody: `allocation "zz" not found`},
		{name: "bad origin", target: "/v1/client/fs/logs/a1?task=t&origin=middle", wantCode: 400, wantBody: "Invalid origin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, h, "GET", tc.target, "")
			if rec.Code != tc.wantCode || (tc.wantCode == 200 && rec.Body.String() != tc.wantBody) ||
				(tc.wantCode != 200 && !strings.Contains(rec.Body.String(), tc.wantBody)) {
				t.Fatalf("got %d %q; want %d %q", rec.Code, rec.Body, tc.wantCode, tc.wantBody)
			}
			if tc.wantArgs != nil && !equalArgs(fc.args, tc.wantArgs) {
				t.Fatalf("TaskLogs args = %v; want %v", fc.args, tc.wantArgs)
			}
		})
	}

	t.Run("framed", func(t *testing.T) {
		rec := do(t, h, "GET", "/v1/client/fs/logs/a1?task=t", "")
		if rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		dec := json.NewDecoder(rec.Body)
		var got strings.Builder
		for dec.More() {
			var f logFrame
			if err := dec.Decode(&f); err != nil {
				t.Fatal(err)
			}
			if f.File != "alloc/logs/t.stdout" || f.Offset != int64(got.Len()) {
				t.Fatalf("frame = %+v", f)
			}
			got.Write(f.Data)
		}
		if got.String() != fc.log {
			t.Fatalf("frames carried %q", got.String())
		}
	})

	t.Run("agent self names the node", func(t *testing.T) {
		rec := do(t, h, "GET", "/v1/agent/self", "")
		var self structs.AgentSelf
		if err := json.Unmarshal(rec.Body.Bytes(), &self); err != nil || self.Stats["client"]["node_id"] != "node-1" {
			t.Fatalf("self = %s", rec.Body)
		}
	})

	t.Run("no client", func(t *testing.T) {
		// Routed through the servers, which do not know the allocation.
		f := newFake().on("Alloc.GetAlloc", func(_, reply any) error { return nil })
		rec := do(t, testHandler(f), "GET", "/v1/client/fs/logs/a1?task=t", "")
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), `allocation "a1" not found`) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if rec = do(t, testHandler(newFake()), "GET", "/v1/client/fs/ls/a1", ""); rec.Code != 501 {
			t.Fatalf("other client endpoint: %d", rec.Code)
		}
		if rec = do(t, testHandler(newFake()), "GET", "/v1/client/stats", ""); rec.Code != 404 {
			t.Fatalf("node stats without a client: %d", rec.Code)
		}
	})
}

func equalArgs(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

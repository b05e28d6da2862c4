package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// fakeServer records every RPC and answers with per-method functions.
type fakeServer struct {
	mu       sync.Mutex
	calls    []fakeCall                             // guarded by mu
	handlers map[string]func(args, reply any) error // read only after setup
	leader   string
	members  []*structs.ServerMember
}

type fakeCall struct {
	method string
	args   any
}

func newFake() *fakeServer {
	return &fakeServer{handlers: map[string]func(args, reply any) error{}, leader: "127.0.0.1:4647"}
}

func (f *fakeServer) on(method string, fn func(args, reply any) error) *fakeServer {
	f.handlers[method] = fn
	return f
}

func (f *fakeServer) RPC(method string, args, reply any) error {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{method: method, args: args})
	f.mu.Unlock()
	fn, ok := f.handlers[method]
	if !ok {
		return fmt.Errorf("fake: no handler for %s", method)
	}
	return fn(args, reply)
}

func (f *fakeServer) Leader() string                   { return f.leader }
func (f *fakeServer) IsLeader() bool                   { return f.leader != "" }
func (f *fakeServer) RPCAddr() string                  { return "127.0.0.1:4647" }
func (f *fakeServer) Members() []*structs.ServerMember { return f.members }

func (f *fakeServer) recorded() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

// lastArgs returns the arguments of the only call, failing otherwise.
func (f *fakeServer) onlyCall(t *testing.T, method string) any {
	t.Helper()
	calls := f.recorded()
	if len(calls) != 1 || calls[0].method != method {
		t.Fatalf("calls = %+v; want exactly one %s", calls, method)
	}
	return calls[0].args
}

func testHandler(f *fakeServer) http.Handler {
	cfg := DefaultConfig()
	cfg.NodeName = "test-node"
	return NewHTTPHandler(f, cfg, hclog.NewNullLogger())
}

func do(t *testing.T, h http.Handler, method, target string, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	if strings.HasPrefix(target, "chunked:") {
		// A reader of unknown length: the request has no Content-Length.
		target = strings.TrimPrefix(target, "chunked:")
		rd = io.MultiReader(strings.NewReader(body))
	}
	req := httptest.NewRequest(method, target, rd)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// okRegister answers Job.Register with a fixed response.
func okRegister(args, reply any) error {
	*reply.(*structs.JobRegisterResponse) = structs.JobRegisterResponse{
		EvalID: "e1", EvalCreateIndex: 9, JobModifyIndex: 9, QueryMeta: structs.QueryMeta{Index: 9},
	}
	return nil
}

func failWith(err error) func(args, reply any) error {
	return func(args, reply any) error { return err }
}

const validJobBody = `{"Job": {"ID": "web", "Name": "web", "Type": "service",
  "TaskGroups": [{"Name": "g", "Count": 2, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": {"command": "/bin/sleep", "args": ["60"]}, "KillTimeout": 5000000000}]}]}}`

func TestHTTPStatusCodes(t *testing.T) {
	big := `{"Job": {"ID": "x", "Meta": {"k": "` + strings.Repeat("a", MaxRequestBodyBytes) + `"}}}`
	cases := []struct {
		name      string
		method    string
		target    string
		body      string
		setup     func(f *fakeServer)
		wantCode  int
		wantBody  string // substring
		wantCalls int
	}{
		{name: "leader", method: "GET", target: "/v1/status/leader",
			setup: func(f *fakeServer) {
				f.on("Status.Leader", func(_, reply any) error { *reply.(*string) = "127.0.0.1:4647"; return nil })
			},
			wantCode: 200, wantBody: `"127.0.0.1:4647"`, wantCalls: 1},
		{name: "peers empty is an array", method: "GET", target: "/v1/status/peers",
			setup:    func(f *fakeServer) { f.on("Status.Peers", func(_, _ any) error { return nil }) },
			wantCode: 200, wantBody: `[]`, wantCalls: 1},
		{name: "wrong method", method: "POST", target: "/v1/status/leader", wantCode: 405},
		{name: "wrong method on job", method: "PATCH", target: "/v1/job/web", wantCode: 405},
		{name: "unknown path", method: "GET", target: "/v1/nope", wantCode: 404},
		{name: "job not found", method: "GET", target: "/v1/job/missing",
			setup: func(f *fakeServer) {
				f.on("Job.GetJob", func(_, reply any) error {
					reply.(*structs.SingleJobResponse).Index = 7
					return nil
				})
			},
			wantCode: 404, wantBody: "job not found", wantCalls: 1},
		{name: "node not found", method: "GET", target: "/v1/node/n1",
			setup:    func(f *fakeServer) { f.on("Node.GetNode", func(_, _ any) error { return nil }) },
			wantCode: 404, wantBody: "node not found", wantCalls: 1},
		{name: "eval not found", method: "GET", target: "/v1/evaluation/e1",
			setup:    func(f *fakeServer) { f.on("Eval.GetEval", func(_, _ any) error { return nil }) },
			wantCode: 404, wantBody: "eval not found", wantCalls: 1},
		{name: "typed not found", method: "GET", target: "/v1/evaluation/e1",
			setup: func(f *fakeServer) {
				f.on("Eval.GetEval", failWith(structs.NewError(structs.ErrCodeNotFound, "eval e1 not found")))
			},
			wantCode: 404, wantBody: "eval e1 not found", wantCalls: 1},
		{name: "register ok", method: "PUT", target: "/v1/jobs", body: validJobBody,
			setup:    func(f *fakeServer) { f.on("Job.Register", okRegister) },
			wantCode: 200, wantBody: `"EvalID":"e1"`, wantCalls: 1},
		{name: "register by POST", method: "POST", target: "/v1/jobs", body: validJobBody,
			setup:    func(f *fakeServer) { f.on("Job.Register", okRegister) },
			wantCode: 200, wantCalls: 1},
		{name: "register on job path", method: "PUT", target: "/v1/job/web", body: validJobBody,
			setup:    func(f *fakeServer) { f.on("Job.Register", okRegister) },
			wantCode: 200, wantCalls: 1},
		{name: "empty and default-valued unmodelled fields accepted", method: "PUT", target: "/v1/jobs",
			body:     `{"PolicyOverride": true, "Job": {"ID": "web", "Update": {"MaxParallel": 1, "Canary": null}, "Periodic": null}}`,
			setup:    func(f *fakeServer) { f.on("Job.Register", okRegister) },
			wantCode: 200, wantCalls: 1},
		{name: "unmodelled field refused", method: "PUT", target: "/v1/jobs",
			body:     `{"Job": {"ID": "web", "Update": {"MaxParallel": 2}, "Multiregion": {"Regions": [{"Name": "west"}]}}}`,
			wantCode: 400, wantBody: "Job.Multiregion: Drover does not support multiregion jobs"},
		{name: "unmodelled request option refused", method: "PUT", target: "/v1/jobs",
			body:     `{"Job": {"ID": "web"}, "PreserveCounts": true}`,
			wantCode: 400, wantBody: "PreserveCounts: Drover does not support"},
		{name: "malformed json", method: "PUT", target: "/v1/jobs", body: `{"Job": {`,
			wantCode: 400, wantBody: "Invalid JSON"},
		{name: "syntax error", method: "PUT", target: "/v1/jobs", body: `{"Job": {"ID": web}}`,
			wantCode: 400, wantBody: "Invalid JSON at byte"},
		{name: "empty body", method: "PUT", target: "/v1/jobs", wantCode: 400, wantBody: "Request body is empty"},
		{name: "job wrong type", method: "PUT", target: "/v1/jobs", body: `{"Job": "web"}`,
			wantCode: 400, wantBody: "Job: must be a JSON object"},
		{name: "nested wrong type", method: "PUT", target: "/v1/jobs", body: `{"Job": {"ID": "w", "TaskGroups": [{"Count": "three"}]}}`,
			wantCode: 400, wantBody: "Job.TaskGroups.Count: expected an integer, got JSON string"},
		{name: "duration as string", method: "PUT", target: "/v1/jobs",
			body:     `{"Job": {"ID": "w", "TaskGroups": [{"Tasks": [{"KillTimeout": "5s"}]}]}}`,
			wantCode: 400, wantBody: "expected an integer (nanoseconds)"},
		{name: "body is an array", method: "PUT", target: "/v1/jobs", body: `[1]`,
			wantCode: 400, wantBody: "Invalid value for request body"},
		{name: "missing job", method: "PUT", target: "/v1/jobs", body: `{}`, wantCode: 400, wantBody: "Job must be specified"},
		{name: "null job", method: "PUT", target: "/v1/jobs", body: `{"Job": null}`, wantCode: 400, wantBody: "Job must be specified"},
		{name: "trailing data", method: "PUT", target: "/v1/jobs", body: validJobBody + `{}`,
			wantCode: 400, wantBody: "exactly one JSON object"},
		{name: "body too large", method: "PUT", target: "/v1/jobs", body: big,
			wantCode: 413, wantBody: "Request body too large"},
		{name: "body too large without length", method: "PUT", target: "chunked:/v1/jobs", body: big,
			wantCode: 413, wantBody: "Request body too large: the limit is 1048576 bytes"},
		{name: "small body without length", method: "PUT", target: "chunked:/v1/jobs", body: validJobBody,
			setup:    func(f *fakeServer) { f.on("Job.Register", okRegister) },
			wantCode: 200, wantCalls: 1},
		{name: "job id mismatch", method: "PUT", target: "/v1/job/other", body: validJobBody,
			wantCode: 400, wantBody: `does not match the URL's job "other"`},
		{name: "namespace mismatch", method: "PUT", target: "/v1/jobs?namespace=prod",
			body: `{"Job": {"ID": "w", "Namespace": "dev"}}`, wantCode: 400, wantBody: "does not match request namespace"},
		{name: "other region", method: "PUT", target: "/v1/jobs?region=mars", body: validJobBody,
			wantCode: 400, wantBody: `No path to region "mars"`},
		{name: "validation error", method: "PUT", target: "/v1/jobs", body: validJobBody,
			setup: func(f *fakeServer) {
				f.on("Job.Register", failWith(&structs.ValidationError{Errors: []structs.FieldError{
					{Field: "Priority", Message: "must be between 1 and 100; got 500"},
					{Field: "TaskGroups[0].Tasks[0].Driver", Message: "must be set"},
				}}))
			},
			wantCode: 400, wantBody: "Priority: must be between 1 and 100; got 500\nTaskGroups[0].Tasks[0].Driver: must be set", wantCalls: 1},
		{name: "no leader", method: "PUT", target: "/v1/jobs", body: validJobBody,
			setup:    func(f *fakeServer) { f.on("Job.Register", failWith(structs.ErrNoLeader)) },
			wantCode: 500, wantBody: "No cluster leader", wantCalls: 1},
		{name: "decoded no leader", method: "GET", target: "/v1/jobs",
			setup: func(f *fakeServer) {
				f.on("Job.List", failWith(structs.DecodeRPCError("[no_leader] No cluster leader")))
			},
			wantCode: 500, wantBody: "No cluster leader", wantCalls: 1},
		{name: "conflict", method: "PUT", target: "/v1/jobs", body: validJobBody,
			setup: func(f *fakeServer) {
				f.on("Job.Register", failWith(structs.NewError(structs.ErrCodeConflict, "Enforcing job modify index 3: job exists with conflicting job modify index: 4")))
			},
			wantCode: 409, wantBody: "conflicting job modify index", wantCalls: 1},
		{name: "too large from rpc", method: "PUT", target: "/v1/jobs", body: validJobBody,
			setup: func(f *fakeServer) {
				f.on("Job.Register", failWith(structs.NewError(structs.ErrCodeTooLarge, "job is too large")))
			},
			wantCode: 400, wantBody: "job is too large", wantCalls: 1},
		{name: "unsupported", method: "GET", target: "/v1/jobs",
			setup:    func(f *fakeServer) { f.on("Job.List", failWith(structs.NewError(structs.ErrCodeUnsupported, "no"))) },
			wantCode: 501, wantCalls: 1},
		{name: "plain error", method: "GET", target: "/v1/jobs",
			setup:    func(f *fakeServer) { f.on("Job.List", failWith(errors.New("disk on fire"))) },
			wantCode: 500, wantBody: "disk on fire", wantCalls: 1},
		{name: "bad purge", method: "DELETE", target: "/v1/job/web?purge=maybe", wantCode: 400, wantBody: "Invalid purge"},
		{name: "bad index", method: "GET", target: "/v1/jobs?index=abc", wantCode: 400, wantBody: "Invalid index"},
		{name: "negative index", method: "GET", target: "/v1/jobs?index=-1", wantCode: 400, wantBody: "Invalid index"},
		{name: "bad wait", method: "GET", target: "/v1/jobs?index=1&wait=forever", wantCode: 400, wantBody: "Invalid wait"},
		{name: "bad stale", method: "GET", target: "/v1/nodes?stale=sometimes", wantCode: 400, wantBody: "Invalid stale"},
		{name: "remove peer needs one selector", method: "DELETE", target: "/v1/operator/raft/peer", wantCode: 400},
		{name: "remove peer", method: "DELETE", target: "/v1/operator/raft/peer?address=10.0.0.1:4647",
			setup:    func(f *fakeServer) { f.on("Operator.RaftRemovePeer", func(_, _ any) error { return nil }) },
			wantCode: 200, wantCalls: 1},
		{name: "health ok", method: "GET", target: "/v1/agent/health",
			setup: func(f *fakeServer) {
				f.on("Status.Leader", func(_, reply any) error { *reply.(*string) = "127.0.0.1:4647"; return nil })
			},
			wantCode: 200, wantBody: `"server":{"ok":true`, wantCalls: 1},
		{name: "health without leader", method: "GET", target: "/v1/agent/health",
			setup:    func(f *fakeServer) { f.on("Status.Leader", func(_, _ any) error { return nil }) },
			wantCode: 500, wantBody: `"server":{"ok":false,"message":"No cluster leader"}`, wantCalls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.setup != nil {
				tc.setup(f)
			}
			rec := do(t, testHandler(f), tc.method, tc.target, tc.body)
			if rec.Code != tc.wantCode {
				t.Fatalf("status = %d; want %d (body %q)", rec.Code, tc.wantCode, rec.Body.String())
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Fatalf("body = %q; want it to contain %q", rec.Body.String(), tc.wantBody)
			}
			if got := len(f.recorded()); got != tc.wantCalls {
				t.Fatalf("RPC calls = %d; want %d: %+v", got, tc.wantCalls, f.recorded())
			}
			ct := rec.Header().Get("Content-Type")
			switch {
			case tc.wantCode == 200 && rec.Body.Len() > 0 && ct != "application/json":
				t.Fatalf("Content-Type = %q on success", ct)
			case tc.wantCode >= 400 && tc.wantCalls > 0 && !strings.HasPrefix(ct, "text/plain") && !strings.Contains(tc.target, "health"):
				t.Fatalf("Content-Type = %q on error", ct)
			}
		})
	}
}

func TestHTTPQueryMetaHeaders(t *testing.T) {
	cases := []struct {
		name string
		meta structs.QueryMeta
		want map[string]string
	}{
		{name: "leader known", meta: structs.QueryMeta{Index: 42, KnownLeader: true, LastContact: 1500 * time.Millisecond},
			want: map[string]string{headerIndex: "42", headerKnownLeader: "true", headerLastContact: "1500"}},
		{name: "index zero sent as one", meta: structs.QueryMeta{},
			want: map[string]string{headerIndex: "1", headerKnownLeader: "false", headerLastContact: "0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake().on("Job.List", func(_, reply any) error {
				reply.(*structs.JobListResponse).QueryMeta = tc.meta
				return nil
			})
			rec := do(t, testHandler(f), "GET", "/v1/jobs", "")
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			for k, v := range tc.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s = %q; want %q", k, got, v)
				}
			}
			if got := strings.TrimSpace(rec.Body.String()); got != "[]" {
				t.Errorf("empty list body = %q; want []", got)
			}
		})
	}
}

func TestHTTPQueryParams(t *testing.T) {
	cases := []struct {
		target string
		want   structs.QueryOptions
	}{
		{target: "/v1/jobs",
			want: structs.QueryOptions{Region: "global", MaxQueryTime: DefaultBlockingWait}},
		{target: "/v1/jobs?index=5&wait=30s&stale&prefix=ab&namespace=ns&region=global",
			want: structs.QueryOptions{Region: "global", Namespace: "ns", Prefix: "ab", AllowStale: true,
				MinQueryIndex: 5, MaxQueryTime: 30 * time.Second}},
		{target: "/v1/jobs?index=5&wait=5000ms&stale=false",
			want: structs.QueryOptions{Region: "global", MinQueryIndex: 5, MaxQueryTime: 5 * time.Second}},
		{target: "/v1/jobs?index=5&wait=1h&stale=true",
			want: structs.QueryOptions{Region: "global", AllowStale: true, MinQueryIndex: 5, MaxQueryTime: MaxBlockingWait}},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			f := newFake().on("Job.List", func(_, _ any) error { return nil })
			if rec := do(t, testHandler(f), "GET", tc.target, ""); rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			got := f.onlyCall(t, "Job.List").(*structs.JobListRequest).QueryOptions
			// A blocking read carries the request's context, so that a
			// client going away ends it.
			if (got.Context() != nil) != (tc.want.MinQueryIndex > 0) {
				t.Fatalf("context %v for index %d", got.Context(), tc.want.MinQueryIndex)
			}
			got.WithContext(nil)
			if got != tc.want {
				t.Fatalf("query options = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestHTTPRegisterArgs(t *testing.T) {
	cases := []struct {
		name      string
		target    string
		body      string
		wantNS    string
		wantEnf   bool
		wantIndex uint64
	}{
		{name: "defaults", target: "/v1/jobs", body: validJobBody, wantNS: "default"},
		{name: "namespace from query", target: "/v1/jobs?namespace=prod", body: validJobBody, wantNS: "prod"},
		{name: "namespace from job", target: "/v1/jobs", body: `{"Job": {"ID": "w", "Namespace": "dev"}}`, wantNS: "dev"},
		{name: "check and set", target: "/v1/jobs", body: `{"EnforceIndex": true, "JobModifyIndex": 12, "Job": {"ID": "w"}}`,
			wantNS: "default", wantEnf: true, wantIndex: 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake().on("Job.Register", okRegister)
			rec := do(t, testHandler(f), "PUT", tc.target, tc.body)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if rec.Header().Get(headerIndex) != "9" {
				t.Errorf("X-Nomad-Index = %q", rec.Header().Get(headerIndex))
			}
			args := f.onlyCall(t, "Job.Register").(*structs.JobRegisterRequest)
			if args.Namespace != tc.wantNS || args.Job.Namespace != tc.wantNS {
				t.Errorf("namespace: request %q job %q; want %q", args.Namespace, args.Job.Namespace, tc.wantNS)
			}
			if args.Region != "global" || args.Job.Region != "global" {
				t.Errorf("region: request %q job %q", args.Region, args.Job.Region)
			}
			if args.EnforceIndex != tc.wantEnf || args.JobModifyIndex != tc.wantIndex {
				t.Errorf("enforce = %v/%d; want %v/%d", args.EnforceIndex, args.JobModifyIndex, tc.wantEnf, tc.wantIndex)
			}
			if args.Eval != nil {
				t.Errorf("HTTP must never set Eval")
			}
		})
	}

	t.Run("job fields decoded", func(t *testing.T) {
		f := newFake().on("Job.Register", okRegister)
		if rec := do(t, testHandler(f), "PUT", "/v1/jobs", validJobBody); rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		job := f.onlyCall(t, "Job.Register").(*structs.JobRegisterRequest).Job
		task := job.TaskGroups[0].Tasks[0]
		if job.ID != "web" || job.TaskGroups[0].Count != 2 || task.Driver != "raw_exec" || task.KillTimeout != 5*time.Second {
			t.Fatalf("decoded job: %+v / %+v", job, task)
		}
		if !reflect.DeepEqual(task.Config["args"], []any{"60"}) {
			t.Fatalf("task config: %#v", task.Config)
		}
	})
}

func TestHTTPDeregisterArgs(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(fmt.Sprint("purge=", purge), func(t *testing.T) {
			f := newFake().on("Job.Deregister", func(_, reply any) error {
				*reply.(*structs.JobDeregisterResponse) = structs.JobDeregisterResponse{EvalID: "e2", QueryMeta: structs.QueryMeta{Index: 11}}
				return nil
			})
			rec := do(t, testHandler(f), "DELETE", fmt.Sprintf("/v1/job/web?purge=%t&namespace=ns", purge), "")
			if rec.Code != 200 || rec.Header().Get(headerIndex) != "11" {
				t.Fatalf("status %d index %q: %s", rec.Code, rec.Header().Get(headerIndex), rec.Body)
			}
			args := f.onlyCall(t, "Job.Deregister").(*structs.JobDeregisterRequest)
			if args.JobID != "web" || args.Purge != purge || args.Namespace != "ns" {
				t.Fatalf("args = %+v", args)
			}
			var out structs.JobDeregisterResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.EvalID != "e2" {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
		})
	}
}

// A blocking query may outlive the server's WriteTimeout; an ordinary
// request may not.
func TestHTTPBlockingQueryExtendsWriteDeadline(t *testing.T) {
	const rpcDelay = 300 * time.Millisecond
	f := newFake().on("Job.List", func(_, _ any) error { time.Sleep(rpcDelay); return nil })
	ts := httptest.NewUnstartedServer(testHandler(f))
	ts.Config.WriteTimeout = 100 * time.Millisecond
	ts.Start()
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/v1/jobs?index=3&wait=1s")
	if err != nil {
		t.Fatalf("blocking query: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(bytes.TrimSpace(body), []byte("[]")) {
		t.Fatalf("blocking query: %d %q", resp.StatusCode, body)
	}

	resp, err = http.Get(ts.URL + "/v1/jobs")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("ordinary request outlived the write timeout")
	}
}

func TestHTTPAgentEndpoints(t *testing.T) {
	f := newFake()
	f.members = []*structs.ServerMember{{ID: "id1", Name: "s1", RPCAddr: "10.0.0.1:4647", Region: "global",
		Datacenter: "dc1", Status: "alive", Leader: true}}
	h := testHandler(f)

	rec := do(t, h, "GET", "/v1/agent/self", "")
	var self structs.AgentSelf
	if err := json.Unmarshal(rec.Body.Bytes(), &self); err != nil || rec.Code != 200 {
		t.Fatalf("self: %d %v %s", rec.Code, err, rec.Body)
	}
	if self.Config["Region"] != "global" || self.Config["Datacenter"] != "dc1" || self.Member.Name != "test-node.global" ||
		self.Member.Port != 4647 || self.Member.Addr != "127.0.0.1" {
		t.Fatalf("self = %+v", self)
	}

	rec = do(t, h, "GET", "/v1/agent/members", "")
	var members structs.AgentMembersResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &members); err != nil || rec.Code != 200 {
		t.Fatalf("members: %d %v %s", rec.Code, err, rec.Body)
	}
	if len(members.Members) != 1 || members.Members[0].Name != "s1.global" || members.Members[0].Tags["leader"] != "true" {
		t.Fatalf("members = %+v", members.Members)
	}
	if len(f.recorded()) != 0 {
		t.Fatalf("self/members should not need RPCs: %+v", f.recorded())
	}
}

func TestHTTPPretty(t *testing.T) {
	f := newFake().on("Status.Peers", func(_, reply any) error { *reply.(*[]string) = []string{"a", "b"}; return nil })
	rec := do(t, testHandler(f), "GET", "/v1/status/peers?pretty", "")
	if !strings.Contains(rec.Body.String(), "\n    \"a\"") {
		t.Fatalf("not indented: %q", rec.Body)
	}
}

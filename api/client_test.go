package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// recorder is a test agent that records the last request and answers
// with a fixed status, headers and body.
type recorder struct {
	method, path, query, body string
	status                    int
	header                    map[string]string
	reply                     string
}

func (r *recorder) server(t *testing.T) *Client {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.method, r.path, r.query, r.body = req.Method, req.URL.Path, req.URL.RawQuery, string(b)
		for k, v := range r.header {
			w.Header().Set(k, v)
		}
		if r.status != 0 {
			w.WriteHeader(r.status)
		}
		_, _ = io.WriteString(w, r.reply)
	}))
	t.Cleanup(ts.Close)
	return NewClient(ts.URL)
}

func TestClientRequests(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		reply     string
		call      func(c *Client) error
		wantMeth  string
		wantPath  string
		wantQuery string
		wantBody  string // substring
	}{
		{name: "leader", reply: `"10.0.0.1:4647"`, wantMeth: "GET", wantPath: "/v1/status/leader",
			call: func(c *Client) error {
				l, err := c.Leader(ctx)
				if err == nil && l != "10.0.0.1:4647" {
					t.Errorf("leader = %q", l)
				}
				return err
			}},
		{name: "peers", reply: `["a","b"]`, wantMeth: "GET", wantPath: "/v1/status/peers",
			call: func(c *Client) error {
				p, err := c.Peers(ctx)
				if err == nil && len(p) != 2 {
					t.Errorf("peers = %v", p)
				}
				return err
			}},
		{name: "jobs with options", reply: `[{"ID":"web"}]`, wantMeth: "GET", wantPath: "/v1/jobs",
			wantQuery: "index=7&namespace=ns&prefix=w&region=r&stale=&wait=1500ms",
			call: func(c *Client) error {
				jobs, _, err := c.Jobs(ctx, &QueryOptions{Region: "r", Namespace: "ns", Prefix: "w", AllowStale: true,
					WaitIndex: 7, WaitTime: 1500 * time.Millisecond})
				if err == nil && (len(jobs) != 1 || jobs[0].ID != "web") {
					t.Errorf("jobs = %+v", jobs)
				}
				return err
			}},
		{name: "register", reply: `{"EvalID":"e1","JobModifyIndex":5}`, wantMeth: "PUT", wantPath: "/v1/jobs",
			wantQuery: "namespace=ns", wantBody: `"EnforceIndex":true,"JobModifyIndex":3`,
			call: func(c *Client) error {
				out, _, err := c.RegisterJob(ctx, &structs.Job{ID: "web"}, &RegisterOptions{EnforceIndex: true, ModifyIndex: 3},
					&WriteOptions{Namespace: "ns"})
				if err == nil && out.EvalID != "e1" {
					t.Errorf("register = %+v", out)
				}
				return err
			}},
		{name: "job escapes id", reply: `{"ID":"a b"}`, wantMeth: "GET", wantPath: "/v1/job/a b",
			call: func(c *Client) error { _, _, err := c.Job(ctx, "a b", nil); return err }},
		{name: "deregister", reply: `{"EvalID":"e2"}`, wantMeth: "DELETE", wantPath: "/v1/job/web", wantQuery: "purge=true",
			call: func(c *Client) error {
				out, _, err := c.DeregisterJob(ctx, "web", true, nil)
				if err == nil && out.EvalID != "e2" {
					t.Errorf("deregister = %+v", out)
				}
				return err
			}},
		{name: "nodes", reply: `[]`, wantMeth: "GET", wantPath: "/v1/nodes",
			call: func(c *Client) error { _, _, err := c.Nodes(ctx, nil); return err }},
		{name: "node", reply: `{"ID":"n1"}`, wantMeth: "GET", wantPath: "/v1/node/n1",
			call: func(c *Client) error { _, _, err := c.Node(ctx, "n1", nil); return err }},
		{name: "eval", reply: `{"ID":"e1"}`, wantMeth: "GET", wantPath: "/v1/evaluation/e1",
			call: func(c *Client) error { _, _, err := c.Eval(ctx, "e1", nil); return err }},
		{name: "raft configuration", reply: `{"Servers":[{"ID":"x","Leader":true}],"Index":3}`, wantMeth: "GET",
			wantPath: "/v1/operator/raft/configuration",
			call: func(c *Client) error {
				rc, err := c.RaftConfiguration(ctx, nil)
				if err == nil && (len(rc.Servers) != 1 || !rc.Servers[0].Leader) {
					t.Errorf("raft config = %+v", rc)
				}
				return err
			}},
		{name: "scheduler configuration", reply: `{"SchedulerConfig":{"SchedulerAlgorithm":"spread","ModifyIndex":4},"Index":4}`,
			wantMeth: "GET", wantPath: "/v1/operator/scheduler/configuration",
			call: func(c *Client) error {
				sc, err := c.SchedulerConfiguration(ctx, nil)
				if err == nil && (sc.SchedulerConfig.SchedulerAlgorithm != structs.SchedulerAlgorithmSpread || sc.SchedulerConfig.ModifyIndex != 4) {
					t.Errorf("scheduler config = %+v", sc.SchedulerConfig)
				}
				return err
			}},
		{name: "scheduler configuration cas", reply: `{"Updated":true,"Index":5}`, wantMeth: "PUT",
			wantPath: "/v1/operator/scheduler/configuration", wantQuery: "cas=4", wantBody: `"SchedulerAlgorithm":"binpack"`,
			call: func(c *Client) error {
				out, err := c.SchedulerCASConfiguration(ctx, &structs.SchedulerConfiguration{SchedulerAlgorithm: "binpack", ModifyIndex: 4}, nil)
				if err == nil && !out.Updated {
					t.Errorf("set = %+v", out)
				}
				return err
			}},
		{name: "remove peer", wantMeth: "DELETE", wantPath: "/v1/operator/raft/peer", wantQuery: "address=1.2.3.4%3A4647",
			call: func(c *Client) error { return c.RaftRemovePeerByAddress(ctx, "1.2.3.4:4647", nil) }},
		{name: "transfer leadership", reply: `{"From":{"ID":"a","Address":"1.1.1.1:4647"},"To":{"ID":"b","Address":"1.2.3.4:4647"},"Noop":false,"Index":9}`,
			wantMeth: "PUT", wantPath: "/v1/operator/raft/transfer-leadership", wantQuery: "id=b",
			call: func(c *Client) error {
				out, err := c.RaftTransferLeadershipByID(ctx, "b", nil)
				if err == nil && (out.To.Address != "1.2.3.4:4647" || out.From.ID != "a") {
					t.Errorf("transfer = %+v", out)
				}
				return err
			}},
		{name: "agent self", reply: `{"config":{"Region":"global"},"member":{"Name":"n.global"}}`, wantMeth: "GET",
			wantPath: "/v1/agent/self",
			call: func(c *Client) error {
				s, err := c.AgentSelf(ctx)
				if err == nil && s.Member.Name != "n.global" {
					t.Errorf("self = %+v", s)
				}
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{reply: tc.reply}
			c := r.server(t)
			if err := tc.call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
			if r.method != tc.wantMeth || r.path != tc.wantPath || r.query != tc.wantQuery {
				t.Fatalf("request = %s %s ?%s; want %s %s ?%s", r.method, r.path, r.query, tc.wantMeth, tc.wantPath, tc.wantQuery)
			}
			if !strings.Contains(r.body, tc.wantBody) {
				t.Fatalf("body %q does not contain %q", r.body, tc.wantBody)
			}
		})
	}
}

func TestClientErrorsAndMeta(t *testing.T) {
	ctx := context.Background()

	t.Run("status error", func(t *testing.T) {
		c := (&recorder{status: 404, reply: "job not found"}).server(t)
		_, _, err := c.Job(ctx, "web", nil)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != 404 || se.Body != "job not found" || !IsNotFound(err) {
			t.Fatalf("err = %#v", err)
		}
		if !strings.Contains(err.Error(), "404 (job not found)") {
			t.Fatalf("message = %q", err)
		}
	})

	t.Run("query meta", func(t *testing.T) {
		c := (&recorder{reply: `[]`, header: map[string]string{
			"X-Nomad-Index": "42", "X-Nomad-KnownLeader": "true", "X-Nomad-LastContact": "250"}}).server(t)
		_, qm, err := c.Nodes(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := QueryMeta{LastIndex: 42, KnownLeader: true, LastContact: 250 * time.Millisecond}
		if *qm != want {
			t.Fatalf("meta = %+v; want %+v", *qm, want)
		}
	})

	t.Run("write meta", func(t *testing.T) {
		c := (&recorder{reply: `{}`, header: map[string]string{"X-Nomad-Index": "9"}}).server(t)
		_, wm, err := c.DeregisterJob(ctx, "web", false, nil)
		if err != nil || wm.LastIndex != 9 {
			t.Fatalf("meta = %+v, %v", wm, err)
		}
	})

	t.Run("unhealthy agent", func(t *testing.T) {
		body, _ := json.Marshal(structs.AgentHealthResponse{Server: &structs.AgentHealth{Message: "No cluster leader"}})
		c := (&recorder{status: 500, reply: string(body)}).server(t)
		h, err := c.AgentHealth(ctx)
		if err == nil || h == nil || h.Server.Ok || h.Server.Message != "No cluster leader" {
			t.Fatalf("health = %+v, %v", h, err)
		}
	})

	t.Run("bad json", func(t *testing.T) {
		c := (&recorder{reply: `{`}).server(t)
		if _, err := c.Leader(ctx); err == nil || !strings.Contains(err.Error(), "decoding response") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("bad address", func(t *testing.T) {
		if _, err := NewClient("ftp://x").Leader(ctx); err == nil || !strings.Contains(err.Error(), "scheme") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestAddressFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{env: map[string]string{}, want: DefaultAddress},
		{env: map[string]string{"NOMAD_ADDR": "http://n:1"}, want: "http://n:1"},
		{env: map[string]string{"NOMAD_ADDR": "http://n:1", "DROVER_ADDR": "http://d:2"}, want: "http://d:2"},
	}
	for _, tc := range cases {
		if got := AddressFromEnv(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("AddressFromEnv(%v) = %q; want %q", tc.env, got, tc.want)
		}
	}
}

func TestBareHostAddress(t *testing.T) {
	r := &recorder{reply: `"x"`}
	c := r.server(t)
	c.Address = strings.TrimPrefix(c.Address, "http://") + "/"
	if _, err := c.Leader(context.Background()); err != nil || r.path != "/v1/status/leader" {
		t.Fatalf("bare host: %v, path %q", err, r.path)
	}
}

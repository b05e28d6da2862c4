package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

func TestClientSurfaceRequests(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		reply     string
		call      func(c *Client) error
		wantMeth  string
		wantPath  string
		wantQuery string
		wantBody  string
	}{
		{name: "job allocations", reply: `[{"ID":"a1"}]`, wantMeth: "GET", wantPath: "/v1/job/web/allocations", wantQuery: "all=true",
			call: func(c *Client) error {
				out, _, err := c.JobAllocations(ctx, "web", true, nil)
				if err == nil && (len(out) != 1 || out[0].ID != "a1") {
					t.Errorf("allocs = %+v", out)
				}
				return err
			}},
		{name: "operator queue", reply: `{"Waiting":2,"BlockedByReason":{"constraints":1}}`, wantMeth: "GET", wantPath: "/v1/operator/queue",
			call: func(c *Client) error {
				q, err := c.QueueStats(ctx, nil)
				if err == nil && (q.Waiting != 2 || q.BlockedByReason["constraints"] != 1) {
					t.Errorf("queue = %+v", q)
				}
				return err
			}},
		{name: "pool instances", reply: `[{"ID":"i-1","State":"idle"}]`, wantMeth: "GET", wantPath: "/v1/node/pool/burst/instances",
			call: func(c *Client) error {
				out, _, err := c.PoolInstances(ctx, "burst", nil)
				if err == nil && (len(out) != 1 || out[0].State != "idle") {
					t.Errorf("instances = %+v", out)
				}
				return err
			}},
		{name: "pool autoscaler", reply: `{"Autoscaler":{"Pool":"burst","Max":3},"Status":{"Events":[{"Type":"create"}]}}`, wantMeth: "GET",
			wantPath: "/v1/node/pool/burst/autoscaler",
			call: func(c *Client) error {
				out, _, err := c.PoolAutoscaler(ctx, "burst", nil)
				if err == nil && (out.Autoscaler.Max != 3 || out.Status.Events[0].Type != "create") {
					t.Errorf("autoscaler = %+v", out)
				}
				return err
			}},
		{name: "pool instance behaviour", reply: `{}`, wantMeth: "PUT", wantPath: "/v1/node/pool/all/instance/i-1", wantBody: `{"Behavior":"drain"}`,
			call: func(c *Client) error {
				_, err := c.SetPoolInstanceBehavior(ctx, "all", "i-1", "drain", nil)
				return err
			}},
		{name: "job evaluations", reply: `[]`, wantMeth: "GET", wantPath: "/v1/job/web/evaluations",
			call: func(c *Client) error { _, _, err := c.JobEvaluations(ctx, "web", nil); return err }},
		{name: "job summary", reply: `{"JobID":"web","Summary":{"g":{"Running":1}}}`, wantMeth: "GET", wantPath: "/v1/job/web/summary",
			call: func(c *Client) error {
				s, _, err := c.JobSummary(ctx, "web", nil)
				if err == nil && s.Summary["g"].Running != 1 {
					t.Errorf("summary = %+v", s)
				}
				return err
			}},
		{name: "plan", reply: `{"JobModifyIndex":3}`, wantMeth: "PUT", wantPath: "/v1/job/web/plan", wantBody: `"Diff":true`,
			call: func(c *Client) error {
				p, _, err := c.PlanJob(ctx, &structs.Job{ID: "web"}, true, nil)
				if err == nil && p.JobModifyIndex != 3 {
					t.Errorf("plan = %+v", p)
				}
				return err
			}},
		{name: "job versions", reply: `{"Versions":[{"ID":"web","Version":1}],"Diffs":[]}`, wantMeth: "GET", wantPath: "/v1/job/web/versions", wantQuery: "diffs=true",
			call: func(c *Client) error {
				v, _, err := c.JobVersions(ctx, "web", true, nil)
				if err == nil && (len(v.Versions) != 1 || v.Versions[0].Version != 1) {
					t.Errorf("versions = %+v", v)
				}
				return err
			}},
		{name: "revert", reply: `{"EvalID":"e1"}`, wantMeth: "PUT", wantPath: "/v1/job/web/revert", wantBody: `"EnforcePriorVersion":4`,
			call: func(c *Client) error {
				prior := uint64(4)
				_, _, err := c.RevertJob(ctx, "web", 2, &prior, nil)
				return err
			}},
		{name: "stable", reply: `{"JobModifyIndex":5}`, wantMeth: "PUT", wantPath: "/v1/job/web/stable", wantBody: `"Stable":true`,
			call: func(c *Client) error { _, _, err := c.SetJobStability(ctx, "web", 2, true, nil); return err }},
		{name: "scale status", reply: `{"JobID":"web","TaskGroups":{"g":{"Desired":2}}}`, wantMeth: "GET", wantPath: "/v1/job/web/scale",
			call: func(c *Client) error {
				s, _, err := c.JobScaleStatus(ctx, "web", nil)
				if err == nil && s.TaskGroups["g"].Desired != 2 {
					t.Errorf("status = %+v", s)
				}
				return err
			}},
		{name: "scale", reply: `{"EvalID":"e1"}`, wantMeth: "PUT", wantPath: "/v1/job/web/scale", wantBody: `"Count":3`,
			call: func(c *Client) error { _, _, err := c.ScaleJob(ctx, "web", "g", 3, "m", nil); return err }},
		{name: "periodic force", reply: `{"EvalID":"e1","EvalCreateIndex":9}`, wantMeth: "PUT", wantPath: "/v1/job/web/periodic/force",
			call: func(c *Client) error {
				out, _, err := c.PeriodicForce(ctx, "web", nil)
				if err == nil && (out.EvalID != "e1" || out.EvalCreateIndex != 9) {
					t.Errorf("force = %+v", out)
				}
				return err
			}},
		{name: "dispatch", reply: `{"DispatchedJobID":"web/dispatch-1-abcdef01","EvalID":"e1"}`, wantMeth: "PUT",
			wantPath: "/v1/job/web/dispatch", wantBody: `"Payload":"aGk="`,
			call: func(c *Client) error {
				out, _, err := c.DispatchJob(ctx, "web", []byte("hi"), map[string]string{"k": "v"}, "", nil)
				if err == nil && out.DispatchedJobID != "web/dispatch-1-abcdef01" {
					t.Errorf("dispatch = %+v", out)
				}
				return err
			}},
		{name: "allocations paged", reply: `[]`, wantMeth: "GET", wantPath: "/v1/allocations",
			wantQuery: "next_token=abc&per_page=5&prefix=ab",
			call: func(c *Client) error {
				_, _, err := c.Allocations(ctx, &QueryOptions{Prefix: "ab", PerPage: 5, NextToken: "abc"})
				return err
			}},
		{name: "services", reply: `[{"Namespace":"default","Services":[{"ServiceName":"web","Tags":["a"]}]}]`,
			wantMeth: "GET", wantPath: "/v1/services", wantQuery: "namespace=%2A",
			call: func(c *Client) error {
				out, _, err := c.Services(ctx, &QueryOptions{Namespace: "*"})
				if err == nil && (len(out) != 1 || out[0].Services[0].ServiceName != "web") {
					t.Errorf("services = %+v", out)
				}
				return err
			}},
		{name: "service", reply: `[{"ID":"s1","Port":8080}]`, wantMeth: "GET", wantPath: "/v1/service/web", wantQuery: "tag=a",
			call: func(c *Client) error {
				out, _, err := c.Service(ctx, "web", &QueryOptions{Params: map[string]string{"tag": "a"}})
				if err == nil && (len(out) != 1 || out[0].Port != 8080) {
					t.Errorf("service = %+v", out)
				}
				return err
			}},
		{name: "alloc checks", reply: `{"c1":{"ID":"c1","Status":"success","Mode":"healthiness"}}`, wantMeth: "GET",
			wantPath: "/v1/client/allocation/a1/checks",
			call: func(c *Client) error {
				out, err := c.AllocChecks(ctx, "a1", nil)
				if err == nil && (len(out) != 1 || out["c1"].Status != "success") {
					t.Errorf("checks = %+v", out)
				}
				return err
			}},
		{name: "alloc stats", reply: `{"ResourceUsage":{"MemoryStats":{"RSS":4096}},"Tasks":{"web":{"ResourceUsage":{"MemoryStats":{"RSS":4096}}}}}`,
			wantMeth: "GET", wantPath: "/v1/client/allocation/a1/stats",
			call: func(c *Client) error {
				out, err := c.AllocStats(ctx, "a1", nil)
				if err == nil && (out.Tasks["web"] == nil || out.Tasks["web"].ResourceUsage.MemoryStats.RSS != 4096) {
					t.Errorf("stats = %+v", out)
				}
				return err
			}},
		{name: "delete service", wantMeth: "DELETE", wantPath: "/v1/service/web/s1",
			call: func(c *Client) error { _, err := c.DeleteService(ctx, "web", "s1", nil); return err }},
		{name: "allocation", reply: `{"ID":"a1"}`, wantMeth: "GET", wantPath: "/v1/allocation/a1",
			call: func(c *Client) error { _, _, err := c.Allocation(ctx, "a1", nil); return err }},
		{name: "stop allocation", reply: `{"EvalID":"e1","Index":4}`, wantMeth: "PUT", wantPath: "/v1/allocation/a1/stop",
			call: func(c *Client) error {
				out, _, err := c.StopAllocation(ctx, "a1", nil)
				if err == nil && out.EvalID != "e1" {
					t.Errorf("stop = %+v", out)
				}
				return err
			}},
		{name: "evals filtered", reply: `[]`, wantMeth: "GET", wantPath: "/v1/evaluations", wantQuery: "job=web&status=blocked",
			call: func(c *Client) error {
				_, _, err := c.Evals(ctx, &QueryOptions{Params: map[string]string{"job": "web", "status": "blocked"}})
				return err
			}},
		{name: "eval allocations", reply: `[]`, wantMeth: "GET", wantPath: "/v1/evaluation/e1/allocations",
			call: func(c *Client) error { _, _, err := c.EvalAllocations(ctx, "e1", nil); return err }},
		{name: "gc", wantMeth: "PUT", wantPath: "/v1/system/gc", wantBody: "{}",
			call: func(c *Client) error { return c.GarbageCollect(ctx) }},
		{name: "node allocations", reply: `[{"ID":"a1"}]`, wantMeth: "GET", wantPath: "/v1/node/n1/allocations",
			call: func(c *Client) error { _, _, err := c.NodeAllocations(ctx, "n1", nil); return err }},
		{name: "drain", reply: `{"NodeModifyIndex":5}`, wantMeth: "PUT", wantPath: "/v1/node/n1/drain",
			wantBody: `"DrainSpec":{"Deadline":60000000000,"IgnoreSystemJobs":false}`,
			call: func(c *Client) error {
				_, _, err := c.DrainNode(ctx, "n1", &structs.DrainSpec{Deadline: time.Minute}, false, nil)
				return err
			}},
		{name: "undrain", reply: `{}`, wantMeth: "PUT", wantPath: "/v1/node/n1/drain", wantBody: `"DrainSpec":null,"MarkEligible":true`,
			call: func(c *Client) error { _, _, err := c.DrainNode(ctx, "n1", nil, true, nil); return err }},
		{name: "eligibility", reply: `{}`, wantMeth: "PUT", wantPath: "/v1/node/n1/eligibility", wantBody: `"Eligibility":"ineligible"`,
			call: func(c *Client) error { _, _, err := c.SetNodeEligibility(ctx, "n1", false, nil); return err }},
		{name: "deployments", reply: `[{"ID":"d1","Status":"running"}]`, wantMeth: "GET", wantPath: "/v1/deployments", wantQuery: "prefix=d",
			call: func(c *Client) error {
				out, _, err := c.Deployments(ctx, "d", nil)
				if err == nil && (len(out) != 1 || out[0].Status != "running") {
					t.Errorf("deployments = %+v", out)
				}
				return err
			}},
		{name: "deployment", reply: `{"ID":"d1","TaskGroups":{"web":{"DesiredTotal":6}}}`, wantMeth: "GET", wantPath: "/v1/deployment/d1",
			call: func(c *Client) error {
				d, _, err := c.Deployment(ctx, "d1", nil)
				if err == nil && d.TaskGroups["web"].DesiredTotal != 6 {
					t.Errorf("deployment = %+v", d)
				}
				return err
			}},
		{name: "deployment allocations", reply: `[]`, wantMeth: "GET", wantPath: "/v1/deployment/allocations/d1",
			call: func(c *Client) error { _, _, err := c.DeploymentAllocations(ctx, "d1", nil); return err }},
		{name: "job latest deployment", reply: `null`, wantMeth: "GET", wantPath: "/v1/job/web/deployment",
			call: func(c *Client) error {
				d, _, err := c.JobLatestDeployment(ctx, "web", nil)
				if err == nil && d != nil {
					t.Errorf("latest = %+v, want nil", d)
				}
				return err
			}},
		{name: "job deployments", reply: `[]`, wantMeth: "GET", wantPath: "/v1/job/web/deployments", wantQuery: "all=true",
			call: func(c *Client) error { _, _, err := c.JobDeployments(ctx, "web", true, nil); return err }},
		{name: "promote", reply: `{"EvalID":"e1"}`, wantMeth: "PUT", wantPath: "/v1/deployment/promote/d1", wantBody: `"All":true`,
			call: func(c *Client) error { _, _, err := c.PromoteDeployment(ctx, "d1", nil, nil); return err }},
		{name: "fail", reply: `{}`, wantMeth: "PUT", wantPath: "/v1/deployment/fail/d1", wantBody: `"DeploymentID":"d1"`,
			call: func(c *Client) error { _, _, err := c.FailDeployment(ctx, "d1", nil); return err }},
		{name: "pause", reply: `{}`, wantMeth: "PUT", wantPath: "/v1/deployment/pause/d1", wantBody: `"Pause":true`,
			call: func(c *Client) error { _, _, err := c.PauseDeployment(ctx, "d1", true, nil); return err }},
		{name: "allocation health", reply: `{}`, wantMeth: "PUT", wantPath: "/v1/deployment/allocation-health/d1", wantBody: `"HealthyAllocationIDs":["a1"]`,
			call: func(c *Client) error {
				_, _, err := c.SetDeploymentAllocHealth(ctx, "d1", []string{"a1"}, nil, nil)
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

func TestClientNextToken(t *testing.T) {
	c := (&recorder{reply: `[]`, header: map[string]string{"X-Nomad-NextToken": "n2"}}).server(t)
	_, qm, err := c.Nodes(context.Background(), &QueryOptions{PerPage: 1})
	if err != nil || qm.NextToken != "n2" {
		t.Fatalf("meta = %+v, %v", qm, err)
	}
}

func TestClientTaskLogs(t *testing.T) {
	r := &recorder{reply: "hello\n"}
	c := r.server(t)
	rc, err := c.TaskLogs(context.Background(), "a1", "web", "stderr", true, "end", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 16)
	n, _ := rc.Read(buf)
	if string(buf[:n]) != "hello\n" || r.path != "/v1/client/fs/logs/a1" ||
		r.query != "follow=true&offset=10&origin=end&plain=true&task=web&type=stderr" {
		t.Fatalf("got %q from %s ?%s", buf[:n], r.path, r.query)
	}
}

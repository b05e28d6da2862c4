package agent

import (
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadDispatch drives a parameterized job with Nomad's Go client:
// registering it creates no evaluation; Dispatch creates a child
// `<id>/dispatch-<unix>-<8 hex>` carrying the payload and meta, which is
// scheduled; Nomad's payload and meta rules are enforced; an idempotency
// token returns the child it made while that child is not dead.
func TestNomadDispatch(t *testing.T) {
	a, c := startServerAgent(t)
	registerNode(t, a, "n1")

	job := baseProbeJob("render")
	job.Type = new("batch")
	job.Meta = map[string]string{"team": "infra", "color": "blue"}
	job.ParameterizedJob = &nomad.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"customer"}, MetaOptional: []string{"color"}}
	job.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/cat", "args": []string{"local/in.txt"}}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &nomad.DispatchPayloadConfig{File: "in.txt"}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID != "" {
		t.Fatalf("registering a parameterized job created evaluation %q", resp.EvalID)
	}
	got, _, err := c.Jobs().Info("render", nil)
	if err != nil || got.ParameterizedJob == nil || got.ParameterizedJob.Payload != "required" || *got.Status != "running" ||
		got.TaskGroups[0].Tasks[0].DispatchPayload.File != "in.txt" {
		t.Fatalf("parameterized job read back as %+v, %v", got, err)
	}

	d, _, err := c.Jobs().Dispatch("render", map[string]string{"customer": "acme", "color": "red"}, []byte("hello payload"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.DispatchedJobID, "render/dispatch-") || d.EvalID == "" || d.JobCreateIndex == 0 || d.EvalCreateIndex == 0 {
		t.Fatalf("dispatch response %+v", d)
	}
	if ev := waitEval(t, c, d.EvalID); ev.Status != "complete" {
		t.Fatalf("dispatched job's evaluation %+v", ev)
	}
	child, _, err := c.Jobs().Info(d.DispatchedJobID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *child.ParentID != "render" || !child.Dispatched || child.ParameterizedJob != nil || string(child.Payload) != "hello payload" ||
		child.Meta["customer"] != "acme" || child.Meta["color"] != "red" || child.Meta["team"] != "infra" {
		t.Fatalf("dispatched child %+v", child)
	}
	if allocs, _, err := c.Jobs().Allocations(d.DispatchedJobID, false, nil); err != nil || len(allocs) != 1 {
		t.Fatalf("child allocations %v, %v", allocs, err)
	}

	// Nomad's id prefix template and priority.
	d2, _, err := c.Jobs().DispatchOpts(&nomad.DispatchOptions{JobID: "render", Meta: map[string]string{"customer": "b"},
		Payload: []byte("x"), IdPrefixTemplate: "nightly", Priority: 80}, nil)
	if err != nil || !strings.HasPrefix(d2.DispatchedJobID, "render/dispatch-nightly-") {
		t.Fatalf("dispatch with a prefix template: %+v, %v", d2, err)
	}
	if j, _, err := c.Jobs().Info(d2.DispatchedJobID, nil); err != nil || *j.Priority != 80 {
		t.Fatalf("priority of the child: %v, %v", j, err)
	}

	// An idempotency token (sent by Nomad's client as a query parameter)
	// returns the child it made.
	w := &nomad.WriteOptions{IdempotencyToken: "once"}
	first, _, err := c.Jobs().Dispatch("render", map[string]string{"customer": "c"}, []byte("p"), "", w)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := c.Jobs().Dispatch("render", map[string]string{"customer": "c"}, []byte("p"), "", w)
	if err != nil || again.DispatchedJobID != first.DispatchedJobID || again.EvalID != "" {
		t.Fatalf("dispatch with the same token: %+v, %v; first %+v", again, err, first)
	}

	for _, tc := range []struct {
		meta    map[string]string
		payload []byte
		want    string
	}{
		{map[string]string{"customer": "a"}, nil, "Payload: payload is required"},
		{map[string]string{}, []byte("p"), "Meta: dispatch did not provide required meta keys: customer"},
		{map[string]string{"customer": "a", "size": "xl"}, []byte("p"), "Meta: dispatch request included unpermitted metadata keys: size"},
		{map[string]string{"customer": "a"}, make([]byte, 16*1024+1), "Payload: payload exceeds maximum size; 16385 > 16384"},
	} {
		if _, _, err := c.Jobs().Dispatch("render", tc.meta, tc.payload, "", nil); err == nil || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "400") {
			t.Errorf("dispatch %v: %v; want a 400 with %q", tc.meta, err, tc.want)
		}
	}
	if _, _, err := c.Jobs().Dispatch(d.DispatchedJobID, nil, nil, "", nil); err == nil || !strings.Contains(err.Error(), "not a parameterized job") {
		t.Fatalf("dispatch of a child: %v", err)
	}
	sum, _, err := c.Jobs().Summary("render", nil)
	if err != nil || sum.Children == nil || sum.Children.Pending+sum.Children.Running+sum.Children.Dead != 3 {
		t.Fatalf("parent summary %+v, %v", sum, err)
	}

	// A forbidden payload; a job that is both periodic and parameterized.
	bad := baseProbeJob("both")
	bad.Type = new("batch")
	bad.ParameterizedJob = &nomad.ParameterizedJobConfig{}
	bad.Periodic = &nomad.PeriodicConfig{Spec: new("@daily")}
	if _, _, err := c.Jobs().Register(bad, nil); err == nil || !strings.Contains(err.Error(), "both periodic and parameterized") {
		t.Fatalf("periodic and parameterized: %v", err)
	}
	bad.Periodic = nil
	bad.ParameterizedJob = &nomad.ParameterizedJobConfig{Payload: "forbidden"}
	if _, _, err := c.Jobs().Register(bad, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Dispatch("both", nil, []byte("p"), "", nil); err == nil || !strings.Contains(err.Error(), "payload is not allowed") {
		t.Fatalf("payload to a forbidding job: %v", err)
	}
}

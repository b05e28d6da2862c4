package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadClientJobScale drives scaling with Nomad's own Go client
// against a dev agent, as `nomad job scale` does: ScaleStatus to find the
// group, Scale with the CLI's message, then ScaleStatus for the events;
// the scaling block's bounds refuse a count outside them.
func TestNomadClientJobScale(t *testing.T) {
	a := startDevAgent(t)
	cfg := nomad.DefaultConfig()
	cfg.Address = a.HTTPURL()
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := nomadJob("sc")
	job.TaskGroups[0].Scaling = &nomad.ScalingPolicy{Min: new(int64(1)), Max: new(int64(4)),
		Policy: map[string]any{"cooldown": "1m"}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	info, _, err := c.Jobs().Info("sc", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp := info.TaskGroups[0].Scaling; sp == nil || *sp.Min != 1 || *sp.Max != 4 || !*sp.Enabled || sp.Type != "horizontal" ||
		sp.Policy["cooldown"] != "1m" {
		t.Fatalf("Info scaling = %+v", sp)
	}

	st, _, err := c.Jobs().ScaleStatus("sc", nil)
	if err != nil || len(st.TaskGroups) != 1 || st.TaskGroups["g"].Desired != 2 {
		t.Fatalf("ScaleStatus = %+v, %v", st, err)
	}
	count := 3
	resp, _, err := c.Jobs().Scale("sc", "g", &count, "submitted using the Nomad CLI", false, map[string]any{"k": "v"}, nil)
	if err != nil || resp.EvalID == "" {
		t.Fatalf("Scale = %+v, %v", resp, err)
	}
	st, _, err = c.Jobs().ScaleStatus("sc", nil)
	if err != nil {
		t.Fatal(err)
	}
	g := st.TaskGroups["g"]
	if g.Desired != 3 || len(g.Events) != 1 || *g.Events[0].Count != 3 || g.Events[0].PreviousCount != 2 ||
		*g.Events[0].EvalID != resp.EvalID || g.Events[0].Message != "submitted using the Nomad CLI" || g.Events[0].Time == 0 {
		t.Fatalf("ScaleStatus group = %+v events %+v", g, g.Events)
	}
	if info, _, err = c.Jobs().Info("sc", nil); err != nil || *info.Version != 1 || *info.TaskGroups[0].Count != 3 {
		t.Fatalf("after Scale: %+v, %v", info, err)
	}
	// The status's JSON holds only what Nomad's type holds.
	res, err := http.Get(a.HTTPURL() + "/v1/job/sc/scale")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(res.Body)
	dec.DisallowUnknownFields()
	var strict nomad.JobScaleStatusResponse
	err = dec.Decode(&strict)
	res.Body.Close()
	if err != nil || strict.TaskGroups["g"].Events[0].Message == "" {
		t.Fatalf("scale status in Nomad's shape: %v", err)
	}

	count = 9
	_, _, err = c.Jobs().Scale("sc", "g", &count, "", false, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "greater than scaling policy maximum") {
		t.Fatalf("Scale above max: %v", err)
	}
	job.TaskGroups[0].Count = new(7)
	_, _, err = c.Jobs().Register(job, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Scaling.Max") {
		t.Fatalf("Register above max: %v", err)
	}
	if _, _, err := c.Jobs().ScaleStatus("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("ScaleStatus of a missing job: %v", err)
	}

	// The group's block as the policy an autoscaler reads.
	if _, _, err := c.Jobs().Register(nomadJob("plain"), nil); err != nil {
		t.Fatal(err)
	}
	stubs, qm, err := c.Scaling().ListPolicies(nil)
	if err != nil || len(stubs) != 1 || qm.LastIndex == 0 || stubs[0].Target["Job"] != "sc" || stubs[0].Target["Group"] != "g" ||
		stubs[0].Target["Namespace"] != "default" || !stubs[0].Enabled || stubs[0].Type != "horizontal" || stubs[0].ID == "" {
		t.Fatalf("ListPolicies = %+v, %v", stubs, err)
	}
	p, _, err := c.Scaling().GetPolicy(stubs[0].ID, nil)
	if err != nil || *p.Min != 1 || *p.Max != 4 || p.Policy["cooldown"] != "1m" || p.ID != stubs[0].ID || p.Target["Group"] != "g" {
		t.Fatalf("GetPolicy = %+v, %v", p, err)
	}
	if _, _, err := c.Scaling().GetPolicy("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("GetPolicy of an unknown ID: %v", err)
	}
	none, _, err := c.Scaling().ListPolicies(&nomad.QueryOptions{Params: map[string]string{"job": "plain"}})
	if err != nil || len(none) != 0 {
		t.Fatalf("ListPolicies of a job without a scaling block = %+v, %v", none, err)
	}
}

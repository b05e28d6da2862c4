package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadClientJobVersions drives job versions with Nomad's own Go
// client against a dev agent: Versions with diffs, Plan with a diff,
// Stable and Revert (with EnforcePriorVersion), and decodes the diffs'
// JSON strictly into Nomad's types.
func TestNomadClientJobVersions(t *testing.T) {
	a := startDevAgent(t)
	cfg := nomad.DefaultConfig()
	cfg.Address = a.HTTPURL()
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := nomadJob("hist")
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	job.TaskGroups[0].Count = new(3)
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register v1: %v", err)
	}
	job.TaskGroups[0].Tasks[0].Env["B"] = "2"
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("Register v2: %v", err)
	}
	// The plan below is of the state once v2 is placed: wait for its
	// evaluation (else the plan also replaces v1's allocations).
	pollUntil(t, "the v2 evaluation complete", 15*time.Second, func() bool {
		ev, _, err := c.Evaluations().Info(reg.EvalID, nil)
		return err == nil && ev.Status == "complete"
	})

	versions, diffs, qm, err := c.Jobs().Versions("hist", true, nil)
	if err != nil || len(versions) != 3 || len(diffs) != 2 || qm.LastIndex == 0 {
		t.Fatalf("Versions = %d versions, %d diffs, %+v, %v", len(versions), len(diffs), qm, err)
	}
	if *versions[0].Version != 2 || *versions[2].Version != 0 {
		t.Fatalf("versions out of order: %d .. %d", *versions[0].Version, *versions[2].Version)
	}
	count := diffs[1].TaskGroups[0]
	if diffs[1].Type != "Edited" || count.Type != "Edited" || len(count.Fields) != 1 || count.Fields[0].Name != "Count" ||
		count.Fields[0].Old != "2" || count.Fields[0].New != "3" {
		t.Fatalf("v0->v1 diff %+v group %+v", diffs[1], count)
	}
	env := diffs[0].TaskGroups[0].Tasks[0]
	if env.Type != "Edited" || len(env.Fields) != 1 || env.Fields[0].Name != "Env[B]" || env.Fields[0].Type != "Added" {
		t.Fatalf("v1->v2 task diff %+v", env)
	}

	// The plan's diff: Count annotated, the group's update counts.
	job.TaskGroups[0].Count = new(4)
	plan, _, err := c.Jobs().Plan(job, true, nil)
	if err != nil || plan.Diff == nil || plan.Diff.Type != "Edited" {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
	g := plan.Diff.TaskGroups[0]
	if g.Updates["create"] != 1 || len(g.Fields) != 1 || g.Fields[0].Name != "Count" || len(g.Fields[0].Annotations) != 1 ||
		g.Fields[0].Annotations[0] != "forces create" {
		t.Fatalf("Plan group diff: updates %v fields %+v", g.Updates, g.Fields)
	}

	st, _, err := c.Jobs().Stable("hist", 1, true, nil)
	if err != nil || st.JobModifyIndex == 0 {
		t.Fatalf("Stable = %+v, %v", st, err)
	}
	versions, _, _, err = c.Jobs().Versions("hist", false, nil)
	if err != nil || !*versions[1].Stable || *versions[0].Stable {
		t.Fatalf("after Stable: %v, %v", versions, err)
	}

	one, two := uint64(1), uint64(2)
	_, _, err = c.Jobs().Revert("hist", 0, &one, nil, "", "")
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "enforcing prior version 1") {
		t.Fatalf("Revert with a stale prior version: %v", err)
	}
	_, _, err = c.Jobs().Revert("hist", 7, nil, nil, "", "")
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Revert to a missing version: %v", err)
	}
	rev, _, err := c.Jobs().Revert("hist", 0, &two, nil, "", "")
	if err != nil || rev.EvalID == "" {
		t.Fatalf("Revert = %+v, %v", rev, err)
	}
	info, _, err := c.Jobs().Info("hist", nil)
	if err != nil || *info.Version != 3 || *info.TaskGroups[0].Count != 2 || info.TaskGroups[0].Tasks[0].Env["B"] != "" {
		t.Fatalf("after Revert: %+v, %v", info, err)
	}

	// The diffs' JSON holds only what Nomad's types hold.
	res, err := http.Get(a.HTTPURL() + "/v1/job/hist/versions?diffs=true")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var raw struct {
		Versions []json.RawMessage
		Diffs    json.RawMessage
	}
	if err := json.Unmarshal(body, &raw); err != nil || len(raw.Versions) != 4 {
		t.Fatalf("versions JSON: %v (%d versions)", err, len(raw.Versions))
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Diffs))
	dec.DisallowUnknownFields()
	var strict []*nomad.JobDiff
	if err := dec.Decode(&strict); err != nil || len(strict) != 3 {
		t.Fatalf("diffs in Nomad's shape: %v (%d)", err, len(strict))
	}
}

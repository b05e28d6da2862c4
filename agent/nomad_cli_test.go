package agent

import (
	"net/http"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadCLIReads replays, with Nomad's Go client, the calls Nomad's
// CLI (1.6) makes for `nomad job status <id>`, `nomad node status <id>`,
// `nomad server members` and `nomad operator snapshot save|restore`, and
// dereferences what the CLI dereferences, so a missing field or endpoint
// fails here instead of as a crash or an error in the CLI.
func TestNomadCLIReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	a, c := startServerAgent(t)
	registerNode(t, a, "node-1")
	job := nomadJob("web")
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev := waitEval(t, c, reg.EvalID); ev.Status != "complete" {
		t.Fatalf("eval = %+v", ev)
	}

	t.Run("job status", func(t *testing.T) {
		stubs, _, err := c.Jobs().PrefixList("we")
		if err != nil || len(stubs) != 1 || stubs[0].ID != "web" {
			t.Fatalf("PrefixList = %+v, %v", stubs, err)
		}
		q := &nomad.QueryOptions{Namespace: stubs[0].Namespace}
		j, _, err := c.Jobs().Info("web", q)
		if err != nil {
			t.Fatal(err)
		}
		// The header lines: every pointer the CLI dereferences.
		if *j.ID != "web" || *j.Name != "web" || *j.SubmitTime == 0 || *j.Type != "service" || *j.Priority != 60 ||
			*j.Namespace != "default" || *j.Status == "" || j.IsPeriodic() || j.IsParameterized() {
			t.Fatalf("job = %+v", j)
		}
		if _, _, err := c.Jobs().Allocations("web", false, q); err != nil {
			t.Fatalf("Allocations: %v", err)
		}
		evals, _, err := c.Jobs().Evaluations("web", q)
		if err != nil || len(evals) == 0 {
			t.Fatalf("Evaluations = %+v, %v", evals, err)
		}
		d, qm, err := c.Jobs().LatestDeployment("web", q)
		if err != nil || d != nil || qm.LastIndex == 0 || !qm.KnownLeader {
			t.Fatalf("LatestDeployment = %+v, %+v, %v", d, qm, err)
		}
		ds, _, err := c.Jobs().Deployments("web", false, q)
		if err != nil || ds == nil || len(ds) != 0 {
			t.Fatalf("Deployments = %+v, %v", ds, err)
		}
		// Like Nomad's server, the deployment reads do not look the job up.
		if d, _, err := c.Jobs().LatestDeployment("nope", nil); err != nil || d != nil {
			t.Fatalf("LatestDeployment of an unknown job = %+v, %v", d, err)
		}
		sum, _, err := c.Jobs().Summary("web", q)
		if err != nil || sum.Summary["g"].Queued+sum.Summary["g"].Running+sum.Summary["g"].Starting != 2 {
			t.Fatalf("Summary = %+v, %v", sum, err)
		}
	})

	t.Run("deployment reads are GET only", func(t *testing.T) {
		for _, path := range []string{"/v1/job/web/deployment", "/v1/job/web/deployments"} {
			req, _ := http.NewRequest(http.MethodPut, a.HTTPURL()+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Fatalf("PUT %s = %d", path, resp.StatusCode)
			}
		}
	})
}

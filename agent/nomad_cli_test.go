package agent

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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
	n := registerNode(t, a, "node-1")
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
		// A blocking query on it waits out its time: nothing changes.
		start := time.Now()
		if _, _, err := c.Jobs().LatestDeployment("web", &nomad.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 300 * time.Millisecond}); err != nil {
			t.Fatalf("blocking LatestDeployment: %v", err)
		}
		if waited := time.Since(start); waited < 250*time.Millisecond {
			t.Fatalf("blocking LatestDeployment returned after %s", waited)
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

	t.Run("node status", func(t *testing.T) {
		stubs, _, err := c.Nodes().PrefixList(n.ID[:8])
		if err != nil || len(stubs) != 1 {
			t.Fatalf("PrefixList = %+v, %v", stubs, err)
		}
		node, _, err := c.Nodes().Info(stubs[0].ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		allocs, _, err := c.Nodes().Allocations(node.ID, nil)
		if err != nil || len(allocs) != 2 {
			t.Fatalf("Nodes.Allocations = %+v, %v", allocs, err)
		}
		// computeNodeTotalResources, in its 1.6 (legacy blocks) and 1.7+
		// (structured blocks) forms.
		r, res := node.Resources, node.Reserved
		if r == nil || res == nil || r.CPU == nil || res.CPU == nil || r.MemoryMB == nil || res.MemoryMB == nil ||
			r.DiskMB == nil || res.DiskMB == nil || node.NodeResources == nil || node.ReservedResources == nil {
			t.Fatalf("the CLI would crash on a nil resource block: Resources %+v Reserved %+v NodeResources %+v ReservedResources %+v",
				r, res, node.NodeResources, node.ReservedResources)
		}
		if *r.CPU-*res.CPU != 4000 || *r.MemoryMB-*res.MemoryMB != 4096 || *r.DiskMB-*res.DiskMB != 10240 {
			t.Fatalf("Resources = %+v, Reserved = %+v", r, res)
		}
		if node.NodeResources.Cpu.CpuShares-int64(node.ReservedResources.Cpu.CpuShares) != 4000 ||
			node.NodeResources.Memory.MemoryMB-int64(node.ReservedResources.Memory.MemoryMB) != 4096 {
			t.Fatalf("NodeResources = %+v, ReservedResources = %+v", node.NodeResources, node.ReservedResources)
		}
		// getAllocatedResources, for each allocation the CLI counts.
		for _, al := range allocs {
			ar := al.AllocatedResources
			if al.Resources == nil || al.Resources.CPU == nil || al.Resources.MemoryMB == nil || al.Resources.DiskMB == nil ||
				al.TaskResources["t"] == nil {
				t.Fatalf("the CLI would crash on alloc %s's Resources %+v", al.ID, al.Resources)
			}
			if *al.Resources.CPU != 200 || *al.Resources.MemoryMB != 64 || *al.Resources.DiskMB != int(ar.Shared.DiskMB) ||
				*al.TaskResources["t"].CPU != 200 || *al.TaskResources["t"].MemoryMB != 64 {
				t.Fatalf("alloc %s Resources = %+v", al.ID, al.Resources)
			}
		}
		one, _, err := c.Allocations().Info(allocs[0].ID, nil)
		if err != nil || one.Resources == nil || *one.Resources.CPU != 200 {
			t.Fatalf("Allocations.Info = %+v, %v", one, err)
		}
		if d := node.Drivers["raw_exec"]; d == nil || !d.Detected {
			t.Fatalf("Drivers = %+v", node.Drivers)
		}
	})

	t.Run("server members", func(t *testing.T) {
		members, err := c.Agent().Members()
		if err != nil || len(members.Members) != 1 {
			t.Fatalf("Members = %+v, %v", members, err)
		}
		m := members.Members[0]
		leader, err := c.Status().RegionLeader(m.Tags["region"])
		if err != nil {
			t.Fatal(err)
		}
		if net.JoinHostPort(m.Addr, m.Tags["port"]) != leader {
			t.Fatalf("member %s:%s is not the leader %s (tags %v)", m.Addr, m.Tags["port"], leader, m.Tags)
		}
		if m.Tags["raft_vsn"] != "3" || m.Tags["build"] == "" || m.Tags["dc"] != "dc1" || m.Tags["bootstrap"] != "1" {
			t.Fatalf("tags = %v", m.Tags)
		}
	})

	t.Run("operator snapshot save and restore", func(t *testing.T) {
		rc, err := c.Operator().Snapshot(nil)
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		// The reader checks the body against the Digest header at EOF.
		snap, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.HasPrefix(snap, []byte("DROVER-SNAPSHOT-ARCHIVE")) {
			t.Fatalf("reading the snapshot: %v (%d bytes)", err, len(snap))
		}
		if _, _, err := c.Jobs().Register(nomadJob("later"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Operator().SnapshotRestore(bytes.NewReader(snap), nil); err != nil {
			t.Fatalf("SnapshotRestore: %v", err)
		}
		if _, _, err := c.Jobs().Info("later", nil); err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("job registered after the snapshot survived its restore: %v", err)
		}
		if j, _, err := c.Jobs().Info("web", nil); err != nil || *j.ID != "web" {
			t.Fatalf("job in the snapshot: %+v, %v", j, err)
		}
	})
}

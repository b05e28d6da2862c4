package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/structs"
)

// TestDevAgentRendersTemplates registers, through Nomad's Go client as
// Nomad's CLI sends it, a raw_exec batch job with an inline template and
// an env template, and checks that the real process saw both rendered
// before it started.
func TestDevAgentRendersTemplates(t *testing.T) {
	a := startDevClientAgent(t)
	srv, cl := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: cl.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady
	})
	out := t.TempDir()
	c, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	job := &nomad.Job{ID: new("tmpl"), Type: new("batch"), Datacenters: []string{"dc1"},
		TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
			RestartPolicy: &nomad.RestartPolicy{Attempts: new(0), Mode: new("fail")},
			Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Env: map[string]string{"OUT": out},
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c",
					`cat local/app.conf ../alloc/shared.txt > "$OUT/seen"; echo "E=$FROM_TEMPLATE" >> "$OUT/seen"; stat -c %a local/app.conf >> "$OUT/seen"`}},
				Templates: []*nomad.Template{
					{EmbeddedTmpl: new("job={{ env \"NOMAD_JOB_ID\" }} task={{ env \"NOMAD_TASK_NAME\" }}\n"),
						DestPath: new("local/app.conf"), Perms: new("0640")},
					{EmbeddedTmpl: new("[[ env \"NOMAD_GROUP_NAME\" ]]\n"), DestPath: new("${NOMAD_ALLOC_DIR}/shared.txt"),
						LeftDelim: new("[["), RightDelim: new("]]")},
					{EmbeddedTmpl: new("FROM_TEMPLATE={{ env \"NOMAD_ALLOC_INDEX\" }}-x\n"), DestPath: new("secrets/file.env"),
						Envvars: new(true)},
				}}}}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var alloc *structs.Allocation
	pollUntil(t, "allocation finished", 30*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "tmpl")
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientTerminalStatus()
	})
	if alloc.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %s: %+v", alloc.ClientStatus, alloc.TaskStates.MustMap()["t"])
	}
	got, err := os.ReadFile(filepath.Join(out, "seen"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "job=tmpl task=t\ng\nE=0-x\n640\n"; string(got) != want {
		t.Fatalf("the task saw %q, want %q", got, want)
	}
}

package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/driver/docker/dockertest"
	"github.com/drover-project/drover/structs"
)

// dockerJob is a Nomad API job of one docker task, as Nomad's CLI sends
// it (no client-side Canonicalize).
func dockerJob(id, jobType string, config map[string]any) *nomad.Job {
	attempts, mode := 0, "fail"
	return &nomad.Job{ID: &id, Name: &id, Type: &jobType, Datacenters: []string{"dc1"},
		TaskGroups: []*nomad.TaskGroup{{Name: ptr("g"),
			RestartPolicy: &nomad.RestartPolicy{Attempts: &attempts, Mode: &mode},
			Tasks: []*nomad.Task{{Name: "t", Driver: "docker", Config: config, KillTimeout: ptr(time.Second),
				Resources: &nomad.Resources{CPU: ptr(100), MemoryMB: ptr(64)}}}}}}
}

func ptr[T any](v T) *T { return &v }

// waitAlloc waits for the job's one allocation to satisfy cond and
// returns it as Nomad's client reads it.
func waitAlloc(t *testing.T, nc *nomad.Client, jobID, what string, cond func(*nomad.Allocation) bool) *nomad.Allocation {
	t.Helper()
	var alloc *nomad.Allocation
	pollUntil(t, what, 60*time.Second, func() bool {
		stubs, _, err := nc.Jobs().Allocations(jobID, false, nil)
		if err != nil || len(stubs) == 0 {
			return false
		}
		alloc, _, err = nc.Allocations().Info(stubs[0].ID, nil)
		return err == nil && cond(alloc)
	})
	return alloc
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDockerJobsOnDevAgent runs docker jobs on a dev agent through Nomad's
// Go client: output reaches `alloc logs`, an OOM kill is the task's event,
// a dynamic port answers through the host, stopping the job leaves no
// container, and a mistyped config key is refused at registration.
func TestDockerJobsOnDevAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and containers")
	}
	dc, img := dockertest.Image(t)
	a := startDevClientAgent(t)
	nc, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "docker detected on the node", 20*time.Second, func() bool {
		n, _, err := nc.Nodes().Info(a.Client().NodeID(), nil)
		return err == nil && n.Status == structs.NodeStatusReady && n.Attributes["driver.docker"] == "1" &&
			n.Drivers["docker"] != nil && n.Drivers["docker"].Healthy
	})

	t.Run("logs", func(t *testing.T) {
		job := dockerJob("docker-logs", "batch", map[string]any{"image": img, "command": "/bin/sh",
			"args": []any{"-c", "echo hello from $NOMAD_TASK_NAME in $NOMAD_TASK_DIR; echo oops >&2"}})
		if _, _, err := nc.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		alloc := waitAlloc(t, nc, "docker-logs", "the batch job to complete", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusComplete
		})
		for typ, want := range map[string]string{"stdout": "hello from t in /local\n", "stderr": "oops\n"} {
			code, body := httpGet(t, fmt.Sprintf("%s/v1/client/fs/logs/%s?task=t&type=%s&plain=true", a.HTTPURL(), alloc.ID, typ))
			if code != 200 || body != want {
				t.Fatalf("alloc logs %s: %d %q, want %q", typ, code, body, want)
			}
		}
	})

	t.Run("oom", func(t *testing.T) {
		job := dockerJob("docker-oom", "batch", map[string]any{"image": img, "command": "/bin/sh", "args": []any{"-c", "tail /dev/zero"}})
		job.TaskGroups[0].Tasks[0].Resources.MemoryMB = ptr(16)
		if _, _, err := nc.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		alloc := waitAlloc(t, nc, "docker-oom", "the task to be OOM-killed", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusFailed
		})
		var term *nomad.TaskEvent
		for _, ev := range alloc.TaskStates["t"].Events {
			if ev.Type == structs.TaskTerminated {
				term = ev
			}
		}
		if term == nil || term.ExitCode != 137 || !strings.Contains(term.DisplayMessage, "OOM Killed") {
			t.Fatalf("terminated event %+v", term)
		}
	})

	t.Run("port and stop", func(t *testing.T) {
		job := dockerJob("docker-web", "service", map[string]any{"image": img, "command": "httpd",
			"args": []any{"-f", "-p", "8080", "-h", "/var/www"}, "ports": []any{"http"}})
		job.TaskGroups[0].Networks = []*nomad.NetworkResource{{DynamicPorts: []nomad.Port{{Label: "http", To: 8080}}}}
		if _, _, err := nc.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		alloc := waitAlloc(t, nc, "docker-web", "the service to run", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusRunning
		})
		var port int
		for _, p := range alloc.AllocatedResources.Shared.Ports {
			if p.Label == "http" {
				port = p.Value
			}
		}
		if port == 0 {
			t.Fatalf("no http port in %+v", alloc.AllocatedResources.Shared)
		}
		var body string
		pollUntil(t, "the published port to answer", 10*time.Second, func() bool {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return true
		})
		if body != "hello from drover\n" {
			t.Fatalf("the port answered %q", body)
		}
		if _, _, err := nc.Jobs().Deregister("docker-web", false, nil); err != nil {
			t.Fatal(err)
		}
		waitAlloc(t, nc, "docker-web", "the allocation to stop", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusComplete
		})
		list, err := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", "com.hashicorp.nomad.alloc_id="+alloc.ID)})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Fatalf("%d containers left after the job stopped", len(list.Items))
		}
	})

	t.Run("pull failure", func(t *testing.T) {
		// The registry is a closed port on loopback: nothing leaves the machine.
		job := dockerJob("docker-nopull", "batch", map[string]any{"image": "127.0.0.1:1/drover/missing:1", "image_pull_timeout": "20s"})
		if _, _, err := nc.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		alloc := waitAlloc(t, nc, "docker-nopull", "the allocation to fail", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusFailed
		})
		var failure *nomad.TaskEvent
		for _, ev := range alloc.TaskStates["t"].Events {
			if ev.Type == structs.TaskDriverFailure {
				failure = ev
			}
		}
		if failure == nil || !strings.Contains(failure.DriverError, "Failed to pull `127.0.0.1:1/drover/missing:1`") ||
			!strings.Contains(failure.DriverError, "127.0.0.1:1") {
			t.Fatalf("driver failure event %+v", failure)
		}
	})

	t.Run("mistyped key refused", func(t *testing.T) {
		job := dockerJob("docker-typo", "batch", map[string]any{"image": img, "comand": "/bin/true", "port_map": []any{map[string]any{"http": 80}}})
		_, _, err := nc.Jobs().Register(job, nil)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Config.comand: unknown field") ||
			!strings.Contains(err.Error(), "Config.port_map: Drover does not support the docker driver's port_map") {
			t.Fatalf("register error %v", err)
		}
	})
}

// TestNomadCorpusDockerJobsRun runs Nomad's own docker job files from the
// corpus (jobspec/testdata/nomad) on a dev agent, parsed by the agent's
// /v1/jobs/parse and registered through Nomad's client. Their image,
// busybox:1, is the local test image under that name (tagged only when
// the daemon has no busybox:1, and untagged afterwards): no registry.
func TestNomadCorpusDockerJobsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and containers")
	}
	dc, img := dockertest.Image(t)
	ctx := context.Background()
	if _, err := dc.ImageInspect(ctx, "busybox:1"); err != nil {
		if _, err := dc.ImageTag(ctx, client.ImageTagOptions{Source: img, Target: "busybox:1"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = dc.ImageRemove(context.Background(), "busybox:1", client.ImageRemoveOptions{}) })
	}
	a := startDevClientAgent(t)
	nc, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "docker detected on the node", 20*time.Second, func() bool {
		n, _, err := nc.Nodes().Info(a.Client().NodeID(), nil)
		return err == nil && n.Status == structs.NodeStatusReady && n.Drivers["docker"] != nil && n.Drivers["docker"].Healthy
	})
	register := func(t *testing.T, file string) *nomad.Job {
		t.Helper()
		src, err := os.ReadFile(filepath.Join("..", "jobspec", "testdata", "nomad", file))
		if err != nil {
			t.Fatal(err)
		}
		job, err := nc.Jobs().ParseHCL(string(src), true)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := nc.Jobs().Register(job, nil); err != nil {
			t.Fatalf("register %s: %v", file, err)
		}
		return job
	}

	t.Run("e2e-sysbatch-fast", func(t *testing.T) {
		job := register(t, "e2e-sysbatch-fast.nomad.hcl")
		alloc := waitAlloc(t, nc, *job.ID, "the sysbatch job to complete", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusComplete
		})
		code, body := httpGet(t, fmt.Sprintf("%s/v1/client/fs/logs/%s?task=sysbatch_task&type=stdout&plain=true", a.HTTPURL(), alloc.ID))
		if code != 200 || body != "hi\n" {
			t.Fatalf("alloc logs: %d %q", code, body)
		}
	})
	t.Run("e2e-eval-priority-thirteen", func(t *testing.T) {
		job := register(t, "e2e-eval-priority-thirteen.nomad.hcl")
		alloc := waitAlloc(t, nc, *job.ID, "the service to run", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusRunning
		})
		if _, _, err := nc.Jobs().Deregister(*job.ID, false, nil); err != nil {
			t.Fatal(err)
		}
		waitAlloc(t, nc, *job.ID, "the allocation to stop", func(a *nomad.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusComplete
		})
		list, err := dc.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", "com.hashicorp.nomad.alloc_id="+alloc.ID)})
		if err != nil || len(list.Items) != 0 {
			t.Fatalf("containers left: %v %v", list.Items, err)
		}
	})
}

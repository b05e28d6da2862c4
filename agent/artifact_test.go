package agent

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/structs"
)

func artifactTarGz(t *testing.T, name, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDevAgentFetchesArtifacts registers, through Nomad's Go client as
// Nomad's CLI sends it, raw_exec batch jobs whose artifacts a local HTTP
// server serves: a tar.gz with its checksum, unpacked into local/, and a
// file fetched with a header into the shared alloc directory, which the
// real process reads. A job whose checksum does not match fails with
// Nomad's "Failed Artifact Download" event after its restart attempt.
func TestDevAgentFetchesArtifacts(t *testing.T) {
	tgz := artifactTarGz(t, "bin/hello.sh", "echo hello-from-tgz\n")
	sum := sha256.Sum256(tgz)
	fileSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/app.tar.gz":
			_, _ = w.Write(tgz)
		case r.URL.Path == "/motd" && r.Header.Get("Authorization") == "Bearer artifacts":
			_, _ = w.Write([]byte("motd-with-header\n"))
		default:
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	defer fileSrv.Close()

	a := startDevClientAgent(t)
	srv, cl := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: cl.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady
	})
	c, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	job := func(id, checksum string) *nomad.Job {
		return &nomad.Job{ID: new(id), Type: new("batch"), Datacenters: []string{"dc1"},
			Meta: map[string]string{"token": "artifacts"},
			TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
				RestartPolicy: &nomad.RestartPolicy{Attempts: new(1), Delay: new(100 * time.Millisecond), Mode: new("fail")},
				Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Env: map[string]string{"OUT": out},
					Config: map[string]any{"command": "/bin/sh", "args": []any{"-c",
						`sh local/bin/hello.sh > "$OUT/seen"; cat "$NOMAD_ALLOC_DIR/motd" >> "$OUT/seen"`}},
					Artifacts: []*nomad.TaskArtifact{
						{GetterSource: new(fileSrv.URL + "/app.tar.gz"), GetterOptions: map[string]string{"checksum": checksum}},
						{GetterSource: new(fileSrv.URL + "/motd"), GetterMode: new("file"),
							RelativeDest:  new("${NOMAD_ALLOC_DIR}/motd"),
							GetterHeaders: map[string]string{"Authorization": "Bearer ${NOMAD_META_token}"}},
					}}}}}}
	}
	finished := func(id string) *nomad.Allocation {
		var stub *nomad.AllocationListStub
		pollUntil(t, id+" finished", 30*time.Second, func() bool {
			allocs, _, err := c.Jobs().Allocations(id, false, nil)
			if err != nil || len(allocs) != 1 {
				return false
			}
			stub = allocs[0]
			return stub.ClientStatus == "complete" || stub.ClientStatus == "failed"
		})
		alloc, _, err := c.Allocations().Info(stub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return alloc
	}

	if _, _, err := c.Jobs().Register(job("art", "sha256:"+hex.EncodeToString(sum[:])), nil); err != nil {
		t.Fatal(err)
	}
	alloc := finished("art")
	if alloc.ClientStatus != "complete" {
		t.Fatalf("allocation %s: %+v", alloc.ClientStatus, alloc.TaskStates["t"].Events)
	}
	got, err := os.ReadFile(filepath.Join(out, "seen"))
	if err != nil || string(got) != "hello-from-tgz\nmotd-with-header\n" {
		t.Fatalf("the task saw %q, %v", got, err)
	}
	var types []string
	for _, ev := range alloc.TaskStates["t"].Events {
		types = append(types, ev.Type)
	}
	if want := "Received,Task Setup,Downloading Artifacts,Started,Terminated"; strings.Join(types, ",") != want {
		t.Fatalf("events %v; want %s", types, want)
	}

	if _, _, err := c.Jobs().Register(job("art-bad", "sha256:"+strings.Repeat("0", 64)), nil); err != nil {
		t.Fatal(err)
	}
	alloc = finished("art-bad")
	ts := alloc.TaskStates["t"]
	var failed []*nomad.TaskEvent
	for _, ev := range ts.Events {
		if ev.Type == nomad.TaskArtifactDownloadFailed {
			failed = append(failed, ev)
		}
	}
	if alloc.ClientStatus != "failed" || !ts.Failed || ts.Restarts != 1 || len(failed) != 2 {
		t.Fatalf("allocation %s, failed %v, restarts %d, %d download failures: %+v", alloc.ClientStatus, ts.Failed, ts.Restarts, len(failed), ts.Events)
	}
	if ev := failed[0]; !strings.Contains(ev.DownloadError, `failed to download artifact "`+fileSrv.URL+`/app.tar.gz"`) ||
		ev.DisplayMessage != ev.DownloadError || ev.Details["download_error"] != ev.DownloadError {
		t.Fatalf("download failure event %+v", ev)
	}
}

// TestArtifactRefusedAtRegistration: an artifact without a source, with a
// destination escaping the allocation directory, a bad mode or a checksum
// that does not parse is refused with a 400 naming the field, and nothing
// is registered.
func TestArtifactRefusedAtRegistration(t *testing.T) {
	_, c := startServerAgent(t)
	for name, tc := range map[string]struct {
		art  *nomad.TaskArtifact
		want string
	}{
		"no source":   {&nomad.TaskArtifact{RelativeDest: new("local/")}, "TaskGroups[0].Tasks[0].Artifacts[0].GetterSource: must be set"},
		"escape":      {&nomad.TaskArtifact{GetterSource: new("https://example.com/x"), RelativeDest: new("../../../etc")}, `TaskGroups[0].Tasks[0].Artifacts[0].RelativeDest: destination "../../../etc" escapes the allocation directory`},
		"mode":        {&nomad.TaskArtifact{GetterSource: new("https://example.com/x"), GetterMode: new("folder")}, `TaskGroups[0].Tasks[0].Artifacts[0].GetterMode: must be one of any, file, dir; got "folder"`},
		"checksum":    {&nomad.TaskArtifact{GetterSource: new("https://example.com/x"), GetterOptions: map[string]string{"checksum": "sha256"}}, `TaskGroups[0].Tasks[0].Artifacts[0].GetterOptions["checksum"]: checksum must be given as "type:value"`},
		"s3 refused":  {&nomad.TaskArtifact{GetterSource: new("s3::https://s3.amazonaws.com/b/k")}, "Drover does not support S3 artifact sources"},
		"bad headers": {&nomad.TaskArtifact{GetterSource: new("https://example.com/x"), GetterHeaders: map[string]string{"A B": "c"}}, `GetterHeaders: invalid header name "A B"`},
	} {
		t.Run(name, func(t *testing.T) {
			id := "art-" + strings.ReplaceAll(name, " ", "-")
			job := &nomad.Job{ID: new(id), TaskGroups: []*nomad.TaskGroup{{Name: new("g"), Tasks: []*nomad.Task{{
				Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
				Artifacts: []*nomad.TaskArtifact{tc.art}}}}}}
			_, _, err := c.Jobs().Register(job, nil)
			var ue nomad.UnexpectedResponseError
			if !errors.As(err, &ue) || ue.StatusCode() != http.StatusBadRequest || !strings.Contains(ue.Body(), tc.want) {
				t.Fatalf("register: %v; want a 400 saying %q", err, tc.want)
			}
			if _, _, err := c.Jobs().Info(id, nil); err == nil {
				t.Fatal("the refused job was registered")
			}
		})
	}
}

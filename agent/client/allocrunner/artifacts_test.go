package allocrunner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-project/drover/structs"
)

// appTarGz is a tar.gz holding app/hello.txt.
func appTarGz(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	body := "hello from the artifact\n"
	if err := tw.WriteHeader(&tar.Header{Name: "app/hello.txt", Mode: 0o644, Size: int64(len(body))}); err != nil {
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

// artifactServer serves /app.tar.gz and counts the requests; it answers
// 403 to a request without the X-Token header.
func artifactServer(t *testing.T, tgz []byte) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Header.Get("X-Token") != "tok-job1" {
			http.Error(w, "no token", http.StatusForbidden)
			return
		}
		_, _ = w.Write(tgz)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestArtifactFetchedBeforeStart: a raw_exec task reads the file its
// tar.gz artifact unpacked into local/<datacenter>; the artifact's
// destination, header and checksum carry references resolved against the
// node and the task's environment;
// the events are Nomad's.
func TestArtifactFetchedBeforeStart(t *testing.T) {
	tgz := appTarGz(t)
	sum := sha256.Sum256(tgz)
	srv, _ := artifactServer(t, tgz)
	e := newEnv(t)
	task := rawExec("app", `cat local/dc7/app/hello.txt > "$NOMAD_ALLOC_DIR/out"`)
	task.Meta = map[string]string{"sum": "sha256:" + hex.EncodeToString(sum[:])}
	task.Artifacts = []*structs.TaskArtifact{{GetterSource: srv.URL + "/app.tar.gz", GetterMode: "any", RelativeDest: "local/${node.datacenter}",
		GetterOptions: map[string]string{"checksum": "${NOMAD_META_sum}"},
		GetterHeaders: map[string]string{"X-Token": "tok-${NOMAD_JOB_ID}"}}}
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	out, err := os.ReadFile(filepath.Join(ar.AllocDir().SharedDir, "out"))
	if err != nil || string(out) != "hello from the artifact\n" {
		t.Fatalf("the task read %q, %v", out, err)
	}
	ts := got.TaskStates.MustMap()["app"]
	want := []string{structs.TaskReceived, structs.TaskSetup, structs.TaskDownloadingArtifacts, structs.TaskStarted, structs.TaskTerminated}
	if strings.Join(eventTypes(ts), ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v", eventTypes(ts), want)
	}
	if ev := findEvent(ts, structs.TaskDownloadingArtifacts); ev.DisplayMessage != "Client is downloading artifacts" {
		t.Fatalf("display message %q", ev.DisplayMessage)
	}
}

// TestArtifactChecksumMismatchFollowsRestartPolicy: a download whose
// checksum does not match is a "Failed Artifact Download" event, and the
// task retries per its restart policy, then fails; it never starts.
func TestArtifactChecksumMismatchFollowsRestartPolicy(t *testing.T) {
	tgz := appTarGz(t)
	srv, requests := artifactServer(t, tgz)
	e := newEnv(t)
	task := rawExec("app", `touch "$NOMAD_ALLOC_DIR/started"`)
	task.Artifacts = []*structs.TaskArtifact{{GetterSource: srv.URL + "/app.tar.gz", GetterMode: "any", RelativeDest: "local/",
		GetterOptions: map[string]string{"checksum": "sha256:" + strings.Repeat("ab", 32)},
		GetterHeaders: map[string]string{"X-Token": "tok-${NOMAD_JOB_ID}"}}}
	a := testAlloc(structs.JobTypeBatch, failPolicy(1), task)
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	ts := got.TaskStates.MustMap()["app"]
	want := []string{structs.TaskReceived, structs.TaskSetup,
		structs.TaskDownloadingArtifacts, structs.TaskArtifactDownloadFailed, structs.TaskRestarting,
		structs.TaskDownloadingArtifacts, structs.TaskArtifactDownloadFailed, structs.TaskNotRestarting}
	if strings.Join(eventTypes(ts), ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v", eventTypes(ts), want)
	}
	ev := findEvent(ts, structs.TaskArtifactDownloadFailed)
	if !strings.HasPrefix(ev.DownloadError, `failed to download artifact "`+srv.URL+`/app.tar.gz": `) ||
		!strings.Contains(strings.ToLower(ev.DownloadError), "checksums did not match") ||
		ev.DisplayMessage != ev.DownloadError || ev.Details["download_error"] != ev.DownloadError {
		t.Fatalf("event %+v", ev)
	}
	if !ts.Failed || ts.Restarts != 1 || requests.Load() != 2 {
		t.Fatalf("failed %v restarts %d requests %d", ts.Failed, ts.Restarts, requests.Load())
	}
	if _, err := os.Stat(filepath.Join(ar.AllocDir().SharedDir, "started")); err == nil {
		t.Fatal("the task started without its artifact")
	}
	if entries, _ := os.ReadDir(filepath.Join(ar.AllocDir().Dir, "app", "local")); len(entries) != 0 {
		t.Fatalf("a failed download left %v in local/", entries)
	}
}

// TestArtifactFetchedOnce: a service task that restarts keeps what it
// fetched; the artifact is not fetched again.
func TestArtifactFetchedOnce(t *testing.T) {
	srv, requests := artifactServer(t, appTarGz(t))
	e := newEnv(t)
	task := &structs.Task{Name: "m", Driver: "mock_driver", Config: map[string]any{"run_for": "5ms"}}
	task.Artifacts = []*structs.TaskArtifact{{GetterSource: srv.URL + "/app.tar.gz", GetterMode: "any", RelativeDest: "local/",
		GetterHeaders: map[string]string{"X-Token": "tok-job1"}}}
	a := testAlloc(structs.JobTypeService, failPolicy(2), task)
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	if ts := got.TaskStates.MustMap()["m"]; ts.Restarts != 2 || requests.Load() != 1 {
		t.Fatalf("restarts %d, requests %d; want 2 and 1", ts.Restarts, requests.Load())
	}
	if _, err := os.Stat(filepath.Join(ar.AllocDir().Dir, "m", "local", "app", "hello.txt")); err != nil {
		t.Fatal(err)
	}
}

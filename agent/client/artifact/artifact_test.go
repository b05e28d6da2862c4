package artifact

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// dirs makes an allocation directory with a task directory "web" in it.
func dirs(t *testing.T) (allocDir, taskDir string) {
	t.Helper()
	allocDir = t.TempDir()
	taskDir = filepath.Join(allocDir, "web")
	for _, d := range []string{filepath.Join(allocDir, "alloc"), filepath.Join(taskDir, "local"), filepath.Join(taskDir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return allocDir, taskDir
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o4755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// server serves paths to bodies and records the request headers.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func serve(t *testing.T, files map[string][]byte) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func fetch(t *testing.T, g *Getter, a *structs.TaskArtifact, allocDir, taskDir string) error {
	t.Helper()
	if a.GetterMode == "" {
		a.GetterMode = structs.GetterModeAny
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return g.Fetch(ctx, Request{Artifact: a, AllocDir: allocDir, TaskDir: taskDir})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noStaging: a fetch, good or bad, leaves no staging directory behind.
func noStaging(t *testing.T, allocDir string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(allocDir, ".artifact-*")); len(m) > 0 {
		t.Fatalf("staging left behind: %v", m)
	}
}

func TestFetchArchivesUnpacked(t *testing.T) {
	tgz := tarGz(t, map[string]string{"app/run.sh": "#!/bin/sh\necho hi\n", "app/conf/a.txt": "a"})
	sum := sha256.Sum256(tgz)
	srv := serve(t, map[string][]byte{"/app.tar.gz": tgz, "/site.zip": zipOf(t, map[string]string{"index.html": "<h1>"})})
	allocDir, taskDir := dirs(t)
	g := New(Config{})

	// A tar.gz with its checksum, into local/ (the default destination).
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: srv.URL + "/app.tar.gz", RelativeDest: "local/",
		GetterOptions: map[string]string{"checksum": "sha256:" + hex.EncodeToString(sum[:])}}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(taskDir, "local/app/run.sh")); got != "#!/bin/sh\necho hi\n" {
		t.Fatalf("run.sh = %q", got)
	}
	fi, err := os.Stat(filepath.Join(taskDir, "local/app/run.sh"))
	if err != nil || fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh mode %v (setuid must be masked): %v", fi.Mode(), err)
	}
	// A zip into the shared alloc directory, merged with what is there.
	if err := os.WriteFile(filepath.Join(allocDir, "alloc", "keep.txt"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: srv.URL + "/site.zip", RelativeDest: "../alloc"}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(allocDir, "alloc/index.html")) != "<h1>" || readFile(t, filepath.Join(allocDir, "alloc/keep.txt")) != "k" {
		t.Fatal("zip not merged into alloc/")
	}
	// archive=false keeps the archive as it is.
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: srv.URL + "/app.tar.gz", RelativeDest: "local/raw",
		GetterOptions: map[string]string{"archive": "false"}}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(taskDir, "local/raw/app.tar.gz")) != string(tgz) {
		t.Fatal("archive=false: the archive was not kept as fetched")
	}
	noStaging(t, allocDir)
}

func TestFetchChecksumMismatch(t *testing.T) {
	srv := serve(t, map[string][]byte{"/app.tar.gz": tarGz(t, map[string]string{"a": "a"})})
	allocDir, taskDir := dirs(t)
	wrong := strings.Repeat("00", 32)
	err := fetch(t, New(Config{}), &structs.TaskArtifact{GetterSource: srv.URL + "/app.tar.gz", RelativeDest: "local/",
		GetterOptions: map[string]string{"checksum": "sha256:" + wrong}}, allocDir, taskDir)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "checksums did not match") {
		t.Fatalf("err = %v; want a checksum mismatch", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(taskDir, "local")); len(entries) != 0 {
		t.Fatalf("a failed fetch wrote %v", entries)
	}
	noStaging(t, allocDir)
}

func TestFetchFileModeAndHeaders(t *testing.T) {
	tgz := tarGz(t, map[string]string{"a": "a"})
	srv := serve(t, map[string][]byte{"/bin/hello": []byte("HELLO"), "/app.tar.gz": tgz})
	allocDir, taskDir := dirs(t)
	g := New(Config{})
	a := &structs.TaskArtifact{GetterSource: srv.URL + "/bin/hello", GetterMode: structs.GetterModeFile,
		RelativeDest: "local/bin/hello-renamed", GetterHeaders: map[string]string{"X-Token": "s3cret", "User-Agent": "drover-test"}}
	if err := fetch(t, g, a, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(taskDir, "local/bin/hello-renamed")); got != "HELLO" {
		t.Fatalf("file = %q", got)
	}
	srv.mu.Lock()
	h := srv.headers[len(srv.headers)-1]
	srv.mu.Unlock()
	if h.Get("X-Token") != "s3cret" || h.Get("User-Agent") != "drover-test" {
		t.Fatalf("headers sent: %v", h)
	}
	// In file mode an archive is written as fetched.
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: srv.URL + "/app.tar.gz", GetterMode: structs.GetterModeFile,
		RelativeDest: "local/app.tgz"}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(taskDir, "local/app.tgz")) != string(tgz) {
		t.Fatal("file mode unpacked the archive")
	}
	// A 404 fails, naming the status.
	err := fetch(t, g, &structs.TaskArtifact{GetterSource: srv.URL + "/missing", RelativeDest: "local/"}, allocDir, taskDir)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestFetchLocalFiles(t *testing.T) {
	allocDir, taskDir := dirs(t)
	g := New(Config{})
	if err := os.WriteFile(filepath.Join(allocDir, "alloc", "data.txt"), []byte("shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(allocDir, "alloc", "tree", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(allocDir, "alloc", "tree", "sub", "f"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file of the allocation directory, absolute and relative.
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: filepath.Join(allocDir, "alloc", "data.txt"), RelativeDest: "local/"}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: "../alloc/data.txt", GetterMode: structs.GetterModeFile, RelativeDest: "local/copy.txt"}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(taskDir, "local/data.txt")) != "shared" || readFile(t, filepath.Join(taskDir, "local/copy.txt")) != "shared" {
		t.Fatal("local file not copied")
	}
	// A directory is copied, not linked.
	if err := fetch(t, g, &structs.TaskArtifact{GetterSource: filepath.Join(allocDir, "alloc", "tree"), GetterMode: structs.GetterModeDir, RelativeDest: "local/tree"}, allocDir, taskDir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(taskDir, "local/tree")); err != nil || !fi.IsDir() || readFile(t, filepath.Join(taskDir, "local/tree/sub/f")) != "f" {
		t.Fatalf("local directory not copied: %v %v", fi, err)
	}
	// Anything outside the allocation directory is refused, directly or
	// through a symlink.
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(allocDir, "alloc", "link")); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{outside, "/etc/passwd", "../../../../../../etc/passwd", filepath.Join(allocDir, "alloc", "link")} {
		err := fetch(t, g, &structs.TaskArtifact{GetterSource: src, GetterMode: structs.GetterModeFile, RelativeDest: "local/stolen"}, allocDir, taskDir)
		if err == nil {
			t.Fatalf("%s: fetched from outside the allocation directory", src)
		}
	}
	if _, err := os.Stat(filepath.Join(taskDir, "local/stolen")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something was written: %v", err)
	}
	noStaging(t, allocDir)
}

func TestFetchNeverWritesOutside(t *testing.T) {
	srv := serve(t, map[string][]byte{"/f": []byte("x"), "/app.tar.gz": tarGz(t, map[string]string{"a": "a"})})
	allocDir, taskDir := dirs(t)
	g := New(Config{})
	outside := t.TempDir()
	// A task made local/evil a symlink to a directory outside.
	if err := os.Symlink(outside, filepath.Join(taskDir, "local", "evil")); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*structs.TaskArtifact{
		{GetterSource: srv.URL + "/f", GetterMode: structs.GetterModeFile, RelativeDest: "local/evil/f"},
		{GetterSource: srv.URL + "/app.tar.gz", RelativeDest: "local/evil"},
		{GetterSource: srv.URL + "/f", RelativeDest: "../../x"},
		{GetterSource: srv.URL + "/f", RelativeDest: "/etc/drover-x"}, // taken relative to the task dir
	} {
		_ = fetch(t, g, a, allocDir, taskDir)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("written outside the allocation directory: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(allocDir), "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("../../x was written")
	}
	if _, err := os.Stat(filepath.Join(taskDir, "etc/drover-x")); err != nil {
		t.Fatalf("an absolute destination outside the alloc dir is taken relative to the task dir: %v", err)
	}
	err := fetch(t, g, &structs.TaskArtifact{GetterSource: srv.URL + "/f", RelativeDest: "../../x"}, allocDir, taskDir)
	if !errors.Is(err, ErrEscapes) {
		t.Fatalf("escaping destination: %v", err)
	}
	noStaging(t, allocDir)
}

func TestFetchLimits(t *testing.T) {
	big := tarGz(t, map[string]string{"a": strings.Repeat("x", 64<<10), "b": "b", "c": "c"})
	srv := serve(t, map[string][]byte{"/big.tar.gz": big, "/blob": bytes.Repeat([]byte("y"), 64<<10)})
	allocDir, taskDir := dirs(t)
	for name, tc := range map[string]struct {
		cfg  Config
		src  string
		want string
	}{
		"unpacked size": {Config{DecompressSize: 1 << 10}, "/big.tar.gz", "larger than limit"},
		"file count":    {Config{DecompressFileCount: 2}, "/big.tar.gz", "too many files"},
		"http size":     {Config{HTTPMaxBytes: 1 << 10}, "/blob", "larger than the limit"},
	} {
		t.Run(name, func(t *testing.T) {
			err := fetch(t, New(tc.cfg), &structs.TaskArtifact{GetterSource: srv.URL + tc.src, RelativeDest: "local/" + name}, allocDir, taskDir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
	// A fetch that outlives its deadline is killed.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer slow.Close()
	start := time.Now()
	err := fetch(t, New(Config{Timeout: time.Second}), &structs.TaskArtifact{GetterSource: slow.URL + "/x", RelativeDest: "local/"}, allocDir, taskDir)
	if err == nil || !strings.Contains(err.Error(), "took longer than") || time.Since(start) > 20*time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
	noStaging(t, allocDir)
}

func TestFetchRepositories(t *testing.T) {
	allocDir, taskDir := dirs(t)
	if _, err := exec.LookPath("git"); err == nil {
		// A repository served over git's dumb http protocol by a local
		// server, cloned at a tag.
		repo := filepath.Join(t.TempDir(), "src")
		bare := filepath.Join(t.TempDir(), "repo.git")
		git := func(dir string, args ...string) {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
				"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		if err := os.MkdirAll(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		git(repo, "init", "-q", "-b", "main")
		if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/repo\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(repo, "add", ".")
		git(repo, "commit", "-q", "-m", "one")
		git(repo, "tag", "v1.0.0")
		git(repo, "clone", "-q", "--bare", repo, bare)
		git(bare, "update-server-info")
		srv := httptest.NewServer(http.StripPrefix("/", http.FileServer(http.Dir(filepath.Dir(bare)))))
		defer srv.Close()
		err := fetch(t, New(Config{}), &structs.TaskArtifact{GetterSource: "git::" + srv.URL + "/repo.git",
			GetterOptions: map[string]string{"ref": "v1.0.0"}, RelativeDest: "local/repository"}, allocDir, taskDir)
		if err != nil {
			t.Fatal(err)
		}
		if readFile(t, filepath.Join(taskDir, "local/repository/go.mod")) != "module example.com/repo\n" {
			t.Fatal("repository not cloned")
		}
	} else {
		t.Log("git is not installed: only the refusals are tested")
	}
	// A local repository would read the client's disk: refused.
	for _, src := range []string{"git::file:///etc", "git::ext::sh -c touch% /tmp/pwned"} {
		err := fetch(t, New(Config{}), &structs.TaskArtifact{GetterSource: src, RelativeDest: "local/repo"}, allocDir, taskDir)
		if err == nil {
			t.Fatalf("%s: fetched", src)
		}
	}
}

func TestSourceURL(t *testing.T) {
	for _, tc := range []struct {
		src  string
		opts map[string]string
		want string
	}{
		{"https://example.com/a.tgz", nil, "https://example.com/a.tgz"},
		{"https://example.com/a.tgz?x=1", map[string]string{"checksum": "md5:00"}, "https://example.com/a.tgz?checksum=md5%3A00&x=1"},
		{"git@github.com:org/repo.git", map[string]string{"ref": "v1"}, "git@github.com:org/repo.git?ref=v1"},
	} {
		got, err := sourceURL(tc.src, tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("sourceURL(%q) = %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
}

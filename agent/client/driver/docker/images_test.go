package docker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDaemon answers the few calls an image pull makes, on a unix socket:
// ping, image inspect (404 until pulled) and image create (a pull that
// waits for release, then succeeds or streams the registry's error).
type fakeDaemon struct {
	pulls   atomic.Int32
	release chan struct{}
	mu      sync.Mutex
	pulled  map[string]bool
}

func startFakeDaemon(t *testing.T) (*fakeDaemon, string) {
	t.Helper()
	f := &fakeDaemon{release: make(chan struct{}), pulled: map[string]bool{}}
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return f, "unix://" + sock
}

func (f *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Api-Version", "1.41")
	p := r.URL.Path
	if i := strings.Index(p, "/images/"); i >= 0 {
		p = p[i:]
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/_ping"):
		fmt.Fprint(w, "OK")
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		ref := strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json")
		f.mu.Lock()
		ok := f.pulled[ref]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"message":"No such image: %s"}`, ref)
			return
		}
		fmt.Fprint(w, `{"Id":"sha256:0123456789abcdef"}`)
	case r.Method == http.MethodPost && p == "/images/create":
		f.pulls.Add(1)
		f.mu.Lock()
		release := f.release
		f.mu.Unlock()
		<-release
		ref := strings.TrimPrefix(r.URL.Query().Get("fromImage"), "docker.io/") + ":" + r.URL.Query().Get("tag")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"Pulling from drover"}`)
		if strings.Contains(ref, "missing") {
			fmt.Fprintln(w, `{"errorDetail":{"message":"manifest for `+ref+` not found: manifest unknown"},"error":"manifest unknown"}`)
			return
		}
		f.mu.Lock()
		f.pulled[ref] = true
		f.mu.Unlock()
		fmt.Fprintln(w, `{"status":"Downloaded newer image"}`)
	default:
		http.Error(w, `{"message":"not in the fake"}`, http.StatusNotImplemented)
	}
}

// TestPullsCoalesced: tasks that start together on an image the daemon
// lacks make one pull; a failed pull reaches every waiting task with the
// registry's message.
func TestPullsCoalesced(t *testing.T) {
	fake, endpoint := startFakeDaemon(t)
	d := New(Config{Endpoint: endpoint})
	defer d.Close()
	for _, ref := range []string{"drover/app:1", "drover/missing:1"} {
		t.Run(ref, func(t *testing.T) {
			before := fake.pulls.Load()
			release := make(chan struct{})
			fake.mu.Lock()
			fake.release = release
			fake.mu.Unlock()
			const tasks = 5
			errs := make(chan error, tasks)
			for i := range tasks {
				go func() {
					_, err := d.images.acquire(context.Background(), fmt.Sprintf("%s/t%d", ref, i),
						&taskConfig{image: ref, pullTimeout: 10 * time.Second})
					errs <- err
				}()
			}
			deadline := time.Now().Add(5 * time.Second)
			for fake.pulls.Load() == before && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // the other tasks join the pull in flight
			close(release)
			for range tasks {
				err := <-errs
				if strings.Contains(ref, "missing") {
					if err == nil || !strings.Contains(err.Error(), "manifest for drover/missing:1 not found: manifest unknown") {
						t.Fatalf("error %v, want the registry's message", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if got := fake.pulls.Load() - before; got != 1 {
				t.Fatalf("%d pulls for %d tasks, want 1", got, tasks)
			}
		})
	}
}

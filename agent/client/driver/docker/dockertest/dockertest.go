// Package dockertest gives tests a local Docker daemon and a small image
// built on the spot, never pulled: a root file system holding Debian's
// static busybox (/bin/busybox from busybox-static) and its applets,
// imported with the daemon's image import. Tests that need docker call
// Image, which skips the test with a clear message when no daemon answers
// or busybox is missing.
//
// It must never reach a registry.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// ImageRef is the test image's reference. It has a tag, so the driver
// never tries to pull "latest" of something else.
const ImageRef = "drover-test/busybox:1"

// BusyboxPath is the static busybox the image is built from.
const BusyboxPath = "/bin/busybox"

// mu serialises image builds within a test binary.
var mu sync.Mutex

// Client returns a client of the local daemon, or skips the test when no
// daemon answers.
func Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.WithHostFromEnv(), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Skipf("docker tests skipped: no docker client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		t.Skipf("docker tests skipped: no docker daemon answers (%v); .ci/run installs docker.io and starts dockerd", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Available reports whether a daemon answers (for code that is not a test).
func Available() bool {
	c, err := client.New(client.WithHostFromEnv(), client.WithAPIVersionNegotiation())
	if err != nil {
		return false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err == nil
}

// Image makes sure the busybox test image exists and returns its
// reference (with the daemon's client), or skips the test.
func Image(t testing.TB) (*client.Client, string) {
	t.Helper()
	c := Client(t)
	mu.Lock()
	defer mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.ImageInspect(ctx, ImageRef); err == nil {
		return c, ImageRef // a client's image GC may remove it: checked each time
	}
	rootfs, err := BusyboxRootfs()
	if err != nil {
		t.Skipf("docker tests skipped: cannot build the busybox image: %v (.ci/run installs busybox-static)", err)
	}
	res, err := c.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(rootfs), SourceName: "-"}, ImageRef,
		client.ImageImportOptions{Changes: []string{`CMD ["/bin/sh"]`, "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin"}})
	if err != nil {
		t.Fatalf("importing the busybox image: %v", err)
	}
	_, _ = bytes.NewBuffer(nil).ReadFrom(res)
	res.Close()
	if _, err := c.ImageInspect(ctx, ImageRef); err != nil {
		t.Fatalf("the imported busybox image is missing: %v", err)
	}
	return c, ImageRef
}

// BusyboxRootfs returns a tar of a root file system: /bin/busybox, a
// symlink to it for each applet, and the directories they need.
func BusyboxRootfs() ([]byte, error) {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := map[string]bool{}
	addDir := func(d string) error {
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now})
	}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "tmp", "var", "var/www", "proc", "sys", "dev"} {
		if err := addDir(d); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), ModTime: now}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, body string }{
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		{"etc/group", "root:x:0:\nnogroup:x:65534:\n"},
		{"var/www/index.html", "hello from drover\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: now}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	for _, p := range strings.Fields(string(out)) {
		p = strings.TrimPrefix(p, "/")
		if p == "bin/busybox" || p == "" {
			continue
		}
		if i := strings.LastIndexByte(p, '/'); i > 0 {
			if err := addDir(p[:i]); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: "/bin/busybox", Mode: 0o777, ModTime: now}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

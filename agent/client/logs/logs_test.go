package logs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRotatorRotatesAndPurges(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRotator(dir, "web.stdout", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("0123456789", 5) // 50 bytes: files 0..4, 0 and 1 purged
	if n, err := r.Write([]byte(data[:25])); err != nil || n != 25 {
		t.Fatalf("write: %d %v", n, err)
	}
	if _, err := r.Write([]byte(data[25:])); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	idx, err := Indexes(dir, "web.stdout")
	if err != nil {
		t.Fatal(err)
	}
	// Writing the 51st byte would open file 5; 50 bytes fill 0..4 exactly.
	if want := []int{2, 3, 4}; !reflect.DeepEqual(idx, want) {
		t.Fatalf("indexes = %v, want %v", idx, want)
	}
	for _, n := range idx {
		b, _ := os.ReadFile(filepath.Join(dir, FileName("web.stdout", n)))
		if string(b) != "0123456789" {
			t.Fatalf("file %d = %q", n, b)
		}
	}

	// A new rotator appends to the newest file (full: it rotates).
	r2, err := NewRotator(dir, "web.stdout", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	b, _ := os.ReadFile(filepath.Join(dir, FileName("web.stdout", 5)))
	if string(b) != "ab" {
		t.Fatalf("file 5 = %q", b)
	}
}

func TestReaderOffsets(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRotator(dir, "t.stdout", 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("abcdefghij")) // abcd efgh ij
	r.Close()
	tests := []struct {
		name   string
		offset int64
		want   string
	}{
		{"start", 0, "abcdefghij"},
		{"inside second file", 5, "fghij"},
		{"exact file boundary", 4, "efghij"},
		{"from end", -3, "hij"},
		{"from end beyond start", -100, "abcdefghij"},
		{"past end", 100, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := NewReader(dir, "t.stdout", tc.offset, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			b, err := io.ReadAll(rd)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got %q want %q", b, tc.want)
			}
		})
	}
}

func TestReaderFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	w, err := NewRotator(dir, "t.stderr", 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	rd, err := NewReader(dir, "t.stderr", 0, true, func() bool {
		select {
		case <-finished:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	go func() {
		for _, s := range []string{"hello ", "rotated ", "world"} {
			w.Write([]byte(s))
			time.Sleep(20 * time.Millisecond)
		}
		w.Close()
		close(finished)
	}()
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "hello rotated world" {
		t.Fatalf("got %q", b)
	}
}

func TestReaderCloseUnblocksFollow(t *testing.T) {
	rd, err := NewReader(t.TempDir(), "x.stdout", 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	errCh := make(chan error, 1)
	go func() {
		_, err := rd.Read(make([]byte, 10))
		errCh <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rd.Close()
	select {
	case err := <-errCh:
		if err == nil {
			t.Fatal("read after close succeeded")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("read did not return after Close")
	}
}

type bufCloser struct {
	bytes.Buffer
	closed bool
}

func (b *bufCloser) Close() error { b.closed = true; return nil }

func TestPumpDrainAndDetach(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, ".t.stdout.fifo")
	out1 := &bufCloser{}
	p, err := StartPump(fifo, out1)
	if err != nil {
		t.Fatal(err)
	}
	wend, err := OpenWriteEnd(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer wend.Close()
	wend.Write([]byte("first "))
	time.Sleep(20 * time.Millisecond) // usually consumed by now; either way nothing is lost
	p.Detach()
	if !out1.closed {
		t.Fatal("detach did not close the writer")
	}
	wend.Write([]byte("second"))

	out2 := &bufCloser{}
	p2, err := StartPump(fifo, out2)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := out1.String() + out2.String(); got != "first second" || !out2.closed {
		t.Fatalf("pumps got %q + %q", out1.String(), out2.String())
	}
}

func TestPumpDrainsLargeOutput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, ".big.fifo")
	w, err := NewRotator(dir, "big.stdout", 3, 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartPump(fifo, w)
	if err != nil {
		t.Fatal(err)
	}
	wend, err := OpenWriteEnd(fifo)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB, four pipe buffers
	if _, err := wend.Write(data); err != nil {
		t.Fatal(err)
	}
	wend.Close()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(dir, "big.stdout", 0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, _ := io.ReadAll(r)
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(data))
	}
}

// TestWriteEndHoldsAMegabyte: a task's output FIFO holds 1 MiB while no
// client reads (a client restart), not the kernel's default 64 KiB, so the
// task's writes do not block.
func TestWriteEndHoldsAMegabyte(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.fifo")
	if err := CreateFIFO(path); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriteEnd(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size < fifoBufferSize {
		t.Fatalf("pipe buffer %d bytes, want %d", size, fifoBufferSize)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, fifoBufferSize-4096))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("writing less than the buffer blocked with no reader")
	}
}

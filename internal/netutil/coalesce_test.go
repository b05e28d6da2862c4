package netutil

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Concurrent writers' messages all arrive, each whole and in its writer's
// order, with and without the yield before each flush.
func TestConcurrentWritesArriveWholeAndOrdered(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testConcurrentWrites(t) })
	t.Run("yield", func(t *testing.T) { testConcurrentWrites(t, YieldBeforeFlush()) })
}

func testConcurrentWrites(t *testing.T, opts ...Option) {
	a, b := tcpPair(t)
	cc := NewCoalescingConn(a, opts...)
	defer cc.Close()
	const writers, perWriter = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				// Frame: writer, sequence, then a body of writer-specific bytes.
				msg := make([]byte, 8+1+i%200)
				binary.BigEndian.PutUint32(msg[0:], uint32(w))
				binary.BigEndian.PutUint32(msg[4:], uint32(i))
				msg[8] = byte(len(msg) - 9)
				for j := 9; j < len(msg); j++ {
					msg[j] = byte(w)
				}
				if _, err := cc.Write(msg); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	next := make([]uint32, writers)
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	hdr := make([]byte, 9)
	for n := 0; n < writers*perWriter; n++ {
		if _, err := io.ReadFull(b, hdr); err != nil {
			t.Fatalf("message %d: %v", n, err)
		}
		w, seq := binary.BigEndian.Uint32(hdr[0:]), binary.BigEndian.Uint32(hdr[4:])
		body := make([]byte, hdr[8])
		if _, err := io.ReadFull(b, body); err != nil {
			t.Fatalf("message %d body: %v", n, err)
		}
		if w >= writers || seq != next[w] {
			t.Fatalf("message %d: writer %d seq %d, want seq %d", n, w, seq, next[w])
		}
		if !bytes.Equal(body, bytes.Repeat([]byte{byte(w)}, len(body))) {
			t.Fatalf("message %d: body interleaved with another write", n)
		}
		next[w]++
	}
	wg.Wait()
}

// slowConn counts writes and makes each take a while, as a busy socket does.
type slowConn struct {
	net.Conn
	writes atomic.Int64
	bytes  atomic.Int64
}

func (s *slowConn) Write(p []byte) (int, error) {
	s.writes.Add(1)
	s.bytes.Add(int64(len(p)))
	time.Sleep(2 * time.Millisecond)
	return len(p), nil
}

func (s *slowConn) Close() error { return nil }

// While the flusher is busy, writes pile up and leave together.
func TestWritesAreCoalescedWhileFlusherIsBusy(t *testing.T) {
	sc := &slowConn{}
	cc := NewCoalescingConn(sc)
	const n = 200
	for range n {
		if _, err := cc.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sc.bytes.Load(); got != n*10 {
		t.Fatalf("%d bytes reached the connection, want %d", got, n*10)
	}
	if w := sc.writes.Load(); w >= n/4 {
		t.Fatalf("%d underlying writes for %d small writes: not coalesced", w, n)
	}
}

// failConn fails every write.
type failConn struct{ net.Conn }

var errBroken = errors.New("broken pipe")

func (failConn) Write([]byte) (int, error) { return 0, errBroken }
func (failConn) Close() error              { return nil }

// A failed write is reported by every later Write.
func TestWriteErrorIsSticky(t *testing.T) {
	cc := NewCoalescingConn(failConn{})
	defer cc.Close()
	cc.Write([]byte("x")) // accepted; the flusher's write fails
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := cc.Write([]byte("y"))
		if errors.Is(err, errBroken) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write error not reported: last err %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := cc.Write([]byte("z")); !errors.Is(err, errBroken) {
		t.Fatalf("later write err = %v, want the sticky error", err)
	}
}

// Close sends what is pending, then refuses writes.
func TestCloseFlushesPendingAndRefusesWrites(t *testing.T) {
	a, b := tcpPair(t)
	cc := NewCoalescingConn(a)
	want := bytes.Repeat([]byte("abc"), 10000)
	if _, err := cc.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if _, err := cc.Write([]byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close err = %v, want ErrClosed", err)
	}
	if err := cc.Close(); err == nil {
		// A second Close reaches the already closed socket.
		t.Log("second close returned nil")
	}
}

package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
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
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestFrameWriter: frames written concurrently arrive whole, each
// writer's in order; Close sends what is pending; later writes fail.
func TestFrameWriter(t *testing.T) {
	c, s := tcpPair(t)
	w := newFrameWriter(c)
	const writers, frames = 20, 200
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range frames {
				// [writer][seq][len][len bytes of writer]
				n := 1 + (i*frames+j)%3000
				f := make([]byte, 12+n)
				binary.BigEndian.PutUint32(f[0:], uint32(i))
				binary.BigEndian.PutUint32(f[4:], uint32(j))
				binary.BigEndian.PutUint32(f[8:], uint32(n))
				copy(f[12:], bytes.Repeat([]byte{byte(i)}, n))
				if _, err := w.Write(f); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	got := make(chan error, 1)
	go func() {
		next := make([]uint32, writers)
		var h [12]byte
		for range writers * frames {
			if _, err := io.ReadFull(s, h[:]); err != nil {
				got <- err
				return
			}
			i, j, n := binary.BigEndian.Uint32(h[0:]), binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
			body := make([]byte, n)
			if _, err := io.ReadFull(s, body); err != nil {
				got <- err
				return
			}
			if int(i) >= writers || j != next[i] || !bytes.Equal(body, bytes.Repeat([]byte{byte(i)}, int(n))) {
				got <- errors.New("a frame arrived torn or out of order")
				return
			}
			next[i]++
		}
		got <- nil
	}()
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("frames did not all arrive")
	}
	if _, err := w.Write([]byte{1}); !errors.Is(err, errWriterClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}

package logs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// drainQuiet is how long Stop waits for more output before it decides the
// FIFO is drained, when the kernel cannot say how much is buffered.
const drainQuiet = 50 * time.Millisecond

// CreateFIFO makes a FIFO at path unless one is there already; anything
// else at path is replaced.
func CreateFIFO(path string) error {
	st, err := os.Lstat(path)
	if err == nil {
		if st.Mode()&os.ModeNamedPipe != 0 {
			return nil
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("creating fifo %s: %w", path, err)
	}
	return nil
}

// OpenWriteEnd opens a FIFO for a task to write to. It is opened read-write
// so that the task's writes never fail with EPIPE while no client reads
// (they wait in the pipe instead). The pipe's buffer is grown to
// fifoBufferSize (best effort), so a task keeps running through a client
// restart while it writes up to that much (the default is 64 KiB, after
// which its writes block until a client reads again).
func OpenWriteEnd(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	growPipe(f)
	return f, nil
}

// fifoBufferSize is the pipe buffer a task's output FIFO asks for: 1 MiB,
// the kernel's default limit for unprivileged processes
// (/proc/sys/fs/pipe-max-size), which root may exceed.
const fifoBufferSize = 1 << 20

// growPipe sets f's pipe buffer to fifoBufferSize, or to the largest size
// the kernel allows below it. Failure leaves the buffer as it was.
func growPipe(f *os.File) {
	fd := int(f.Fd())
	for size := fifoBufferSize; size > 64<<10; size /= 2 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, size); err == nil {
			return
		}
	}
}

// Pump copies a FIFO into a writer until stopped.
type Pump struct {
	f    *os.File
	w    io.WriteCloser
	done chan struct{}

	// state: 0 running, 1 draining, 2 detaching.
	state atomic.Int32
	quiet time.Duration
	once  sync.Once
	err   error // first write error; read after done
}

const (
	pumpRunning int32 = iota
	pumpDraining
	pumpDetaching
)

// StartPump creates the FIFO if needed and starts copying it into w. The
// pump owns w and closes it when it stops.
func StartPump(fifo string, w io.WriteCloser) (*Pump, error) {
	if err := CreateFIFO(fifo); err != nil {
		return nil, err
	}
	// Read-write: opening never blocks and the reader never sees EOF
	// between two runs of the task; Stop ends the pump instead.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	p := &Pump{f: f, w: w, done: make(chan struct{}), quiet: drainQuiet}
	go p.run()
	return p, nil
}

func (p *Pump) run() {
	defer close(p.done)
	defer p.w.Close()
	defer p.f.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := p.f.Read(buf)
		p.write(buf[:n])
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		switch p.state.Load() {
		case pumpRunning:
			continue
		case pumpDraining:
			p.drain(buf)
		}
		return
	}
}

func (p *Pump) write(b []byte) {
	if len(b) == 0 {
		return
	}
	if _, err := p.w.Write(b); err != nil && p.err == nil {
		p.err = err
	}
}

// drain reads what the pipe holds. The writers are gone (the task exited
// and its group was killed), so the kernel's count of buffered bytes says
// exactly when to stop; without it, reading stops after a quiet period.
func (p *Pump) drain(buf []byte) {
	for {
		avail, err := buffered(p.f)
		if err == nil && avail == 0 {
			return
		}
		wait := p.quiet
		if err == nil {
			wait = time.Second // data is there: the read returns at once
		}
		_ = p.f.SetReadDeadline(time.Now().Add(wait))
		n, rerr := p.f.Read(buf)
		p.write(buf[:n])
		if rerr != nil {
			return
		}
	}
}

// buffered returns how many bytes wait in the pipe (FIONREAD).
func buffered(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int32
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Stop reads what is left in the FIFO, then closes the FIFO and the
// writer. Call it once the task has exited for good (output written later
// is lost).
func (p *Pump) Stop() error {
	p.once.Do(func() {
		p.state.Store(pumpDraining)
		_ = p.f.SetReadDeadline(time.Unix(1, 0)) // wake a blocked read
	})
	<-p.done
	return p.err
}

// Detach stops reading at once, leaving unread output in the FIFO for the
// next client, and closes the writer. Call it when the client shuts down
// but the task keeps running.
func (p *Pump) Detach() {
	p.once.Do(func() {
		p.state.Store(pumpDetaching)
		_ = p.f.SetReadDeadline(time.Unix(1, 0))
	})
	<-p.done
}

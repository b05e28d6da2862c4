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
)

// DefaultDrainQuiet is how long Stop waits for more output before it
// decides the FIFO is drained.
const DefaultDrainQuiet = 50 * time.Millisecond

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
// (they wait in the pipe instead).
func OpenWriteEnd(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR, 0)
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
	p := &Pump{f: f, w: w, done: make(chan struct{}), quiet: DefaultDrainQuiet}
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
		if n > 0 {
			if _, werr := p.w.Write(buf[:n]); werr != nil && p.err == nil {
				p.err = werr
			}
			if p.state.Load() == pumpDraining {
				_ = p.f.SetReadDeadline(time.Now().Add(p.quiet))
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && p.state.Load() == pumpRunning {
				continue
			}
			return
		}
	}
}

// Stop reads what is left in the FIFO (until no output arrives for a short
// quiet period), then closes the FIFO and the writer. Call it once the task
// has exited for good.
func (p *Pump) Stop() error {
	p.once.Do(func() {
		p.state.Store(pumpDraining)
		_ = p.f.SetReadDeadline(time.Now().Add(p.quiet))
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

package logs

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// followPoll is how often a following reader looks for more output.
const followPoll = 100 * time.Millisecond

// Reader streams the files of a rotated series in order. Create one with
// NewReader; it is safe to Close from another goroutine while Read blocks.
// It opens only regular files inside dir (confine.go): a log file, or the
// log directory, replaced by a symlink leading out is an error, never
// followed.
type Reader struct {
	dir, base string
	follow    bool
	done      func() bool

	mu      sync.Mutex
	root    *os.Root // dir once it exists; guarded by mu
	f       *os.File // guarded by mu
	index   int      // guarded by mu
	closed  bool     // guarded by mu
	closeCh chan struct{}
}

// NewReader returns a reader over <dir>/<base>.N. offset >= 0 starts that
// many bytes after the start of the oldest file kept; offset < 0 starts
// that many bytes before the current end. With follow, Read waits for more
// output at the end until done() reports that no more will come (done may
// be nil: follow until Close). Without follow, Read returns io.EOF at the
// current end.
func NewReader(dir, base string, offset int64, follow bool, done func() bool) (*Reader, error) {
	r := &Reader{dir: dir, base: base, follow: follow, done: done, index: -1, closeCh: make(chan struct{})}
	idx, err := r.indexesLocked()
	if err != nil {
		r.Close()
		return nil, err
	}
	if len(idx) == 0 {
		if !follow {
			return r, nil // empty stream
		}
		r.index = -1
		return r, nil
	}
	sizes := make([]int64, len(idx))
	var total int64
	for i, n := range idx {
		st, err := r.root.Lstat(FileName(base, n))
		if err == nil && st.Mode().IsRegular() {
			sizes[i] = st.Size()
		}
		total += sizes[i]
	}
	start := offset
	if offset < 0 {
		start = total + offset
		if start < 0 {
			start = 0
		}
	}
	if start > total {
		start = total
	}
	// Find the file holding byte start.
	i := 0
	for i < len(idx)-1 && start >= sizes[i] {
		start -= sizes[i]
		i++
	}
	f, err := openLog(r.root, FileName(base, idx[i]), os.O_RDONLY)
	if err != nil {
		r.Close()
		return nil, err
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		r.Close()
		return nil, err
	}
	r.f, r.index = f, idx[i]
	return r, nil
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return 0, os.ErrClosed
		}
		if r.f != nil {
			n, err := r.f.Read(p)
			if n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
				r.mu.Unlock()
				return n, err
			}
		}
		// At the end of the current file: move to the next one if the
		// writer has rotated (the current file is then final).
		moved, err := r.advanceLocked()
		r.mu.Unlock()
		if err != nil {
			return 0, err
		}
		if moved {
			continue
		}
		if !r.follow {
			return 0, io.EOF
		}
		if r.done != nil && r.done() {
			// One last look: output written before done turned true.
			r.mu.Lock()
			var n int
			if r.f != nil {
				n, _ = r.f.Read(p)
			}
			moved, _ := r.advanceLocked()
			r.mu.Unlock()
			if n > 0 {
				return n, nil
			}
			if moved {
				continue
			}
			return 0, io.EOF
		}
		select {
		case <-r.closeCh:
			return 0, os.ErrClosed
		case <-time.After(followPoll):
		}
	}
}

// advanceLocked opens the next file of the series after the current one,
// if there is one. A newer file means the current one is complete; any
// bytes of it not yet read are read first by the caller's next Read.
func (r *Reader) advanceLocked() (bool, error) {
	idx, err := r.indexesLocked()
	if err != nil {
		return false, err
	}
	next := -1
	for _, n := range idx {
		if n > r.index {
			next = n
			break
		}
	}
	if next < 0 {
		return false, nil
	}
	if r.f != nil {
		// Drain what the writer added before rotating.
		if st, err := r.f.Stat(); err == nil {
			if pos, err := r.f.Seek(0, io.SeekCurrent); err == nil && pos < st.Size() {
				return true, nil
			}
		}
	}
	f, err := openLog(r.root, FileName(r.base, next), os.O_RDONLY)
	if err != nil {
		if os.IsNotExist(err) {
			// Purged between listing and opening; look again next time.
			r.index = next
			if r.f != nil {
				r.f.Close()
				r.f = nil
			}
			return true, nil
		}
		return false, err
	}
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.index = f, next
	return true, nil
}

// Close stops the reader; a blocked Read returns.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	close(r.closeCh)
	if r.root != nil {
		r.root.Close()
	}
	if r.f != nil {
		return r.f.Close()
	}
	return nil
}

// indexesLocked lists the series in dir, opening dir first if it was not
// there before; a dir that does not exist yet holds no files.
func (r *Reader) indexesLocked() ([]int, error) {
	if r.root == nil {
		root, err := openDir(r.dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		r.root = root
	}
	return indexesIn(r.root, r.base)
}

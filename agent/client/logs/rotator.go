package logs

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Defaults for rotation, as Nomad's task log defaults.
const (
	DefaultMaxFiles    = 10
	DefaultMaxFileSize = 10 << 20
)

// Rotator is an io.WriteCloser over <dir>/<base>.<n>. It is safe for
// concurrent use. Its files are opened inside dir (confine.go): it never
// writes through a symlink leading out of dir.
type Rotator struct {
	dir, base string
	root      *os.Root // dir, held open; nil after Close; guarded by mu
	maxFiles  int
	maxSize   int64

	mu    sync.Mutex
	f     *os.File // current file; guarded by mu
	index int      // current file index; guarded by mu
	size  int64    // bytes in the current file; guarded by mu
}

// NewRotator opens the newest existing file of the series for appending (or
// creates <base>.0). maxFiles and maxSize of 0 take the defaults.
func NewRotator(dir, base string, maxFiles int, maxSize int64) (*Rotator, error) {
	if maxFiles <= 0 {
		maxFiles = DefaultMaxFiles
	}
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Rotator{dir: dir, base: base, root: root, maxFiles: maxFiles, maxSize: maxSize}
	idx, err := indexesIn(root, base)
	if err != nil {
		root.Close()
		return nil, err
	}
	if len(idx) > 0 {
		r.index = idx[len(idx)-1]
	}
	if err := r.openLocked(); err != nil {
		root.Close()
		return nil, err
	}
	return r, nil
}

// FileName returns the name of file n of a series.
func FileName(base string, n int) string { return base + "." + strconv.Itoa(n) }

// Indexes lists the indexes of the files of a series in dir, ascending.
func Indexes(dir, base string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return indexesOf(entries, base), nil
}

// indexesOf picks the indexes of a series' files from directory entries.
func indexesOf(entries []os.DirEntry, base string) []int {
	var out []int
	prefix := base + "."
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) {
			continue
		}
		n, err := strconv.Atoi(name[len(prefix):])
		if err != nil || n < 0 {
			continue
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func (r *Rotator) openLocked() error {
	f, err := openLog(r.root, FileName(r.base, r.index), os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write appends p, starting new files as the size limit is reached.
func (r *Rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	written := 0
	for len(p) > 0 {
		room := r.maxSize - r.size
		if room <= 0 {
			if err := r.rotateLocked(); err != nil {
				return written, err
			}
			continue
		}
		chunk := p
		if int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		n, err := r.f.Write(chunk)
		written += n
		r.size += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

func (r *Rotator) rotateLocked() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("closing log file: %w", err)
	}
	r.index++
	if err := r.openLocked(); err != nil {
		r.f = nil
		return err
	}
	// Purge the oldest files beyond the count.
	idx, err := indexesIn(r.root, r.base)
	if err != nil {
		return nil // the write can go on; purging is retried next rotation
	}
	for _, n := range idx {
		if n <= r.index-r.maxFiles {
			_ = r.root.Remove(FileName(r.base, n))
		}
	}
	return nil
}

// Close closes the current file. Writes after Close fail.
func (r *Rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root != nil {
		r.root.Close()
		r.root = nil
	}
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Discard is a writer for a task whose logs block disables its logs: the
// pump reads the task's output and drops it (the task never blocks on a
// full pipe).
var Discard io.WriteCloser = discard{}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

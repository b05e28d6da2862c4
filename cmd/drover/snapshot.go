package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/fsm"
)

func snapshotCommands() []*command {
	return []*command{
		{name: "operator snapshot save", synopsis: "Save a snapshot of the cluster's state to a file", run: runSnapshotSave},
		{name: "operator snapshot restore", synopsis: "Restore the cluster's state from a snapshot file", run: runSnapshotRestore},
	}
}

func runSnapshotSave(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "operator snapshot save", "[options] <file>",
		"Save a consistent, checksummed snapshot of the whole cluster state, taken on the leader.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	path := fs.Arg(0)
	rc, size, _, err := af.client().SnapshotSave(context.Background(), nil)
	if err != nil {
		return errorf(e, "saving snapshot: %v", err)
	}
	defer rc.Close()
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return errorf(e, "creating %s: %v", tmp, err)
	}
	stop := progress(e, "Received", size)
	written, err := io.Copy(f, stop.count(rc))
	stop.done()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var meta fsm.ArchiveMeta
	if err == nil {
		meta, err = readMeta(tmp)
	}
	if err != nil {
		os.Remove(tmp)
		return errorf(e, "saving snapshot: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errorf(e, "saving snapshot: %v", err)
	}
	fmt.Fprintf(e.stdout, "State file written to %s: %d bytes (state at index %d, SHA-256 %s)\n",
		path, written, meta.Index, meta.SHA256)
	return exitOK
}

func runSnapshotRestore(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "operator snapshot restore", "[options] <file>",
		"Restore the cluster's state from a snapshot file. The file is checked first, here and\n"+
			"again on the leader; a damaged file is refused before anything changes.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	path := fs.Arg(0)
	meta, err := readMeta(path)
	if err != nil {
		return errorf(e, "refusing %s: %v", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return errorf(e, "opening %s: %v", path, err)
	}
	defer f.Close()
	st, _ := f.Stat()
	stop := progress(e, "Sent", st.Size())
	err = af.client().SnapshotRestore(context.Background(), stop.count(f), nil)
	stop.done()
	if err != nil {
		return errorf(e, "restoring snapshot: %v", err)
	}
	fmt.Fprintf(e.stdout, "Snapshot restored (taken at index %d, %s)\n", meta.Index, meta.Created.Format(time.RFC3339))
	return exitOK
}

// readMeta checks a snapshot file's magic, size and SHA-256.
func readMeta(path string) (fsm.ArchiveMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return fsm.ArchiveMeta{}, err
	}
	defer f.Close()
	meta, _, err := fsm.ReadArchive(f)
	return meta, err
}

// progressMeter prints bytes moved once a second on stderr while a long
// transfer runs.
type progressMeter struct {
	n    atomic.Int64
	stop chan struct{}
	end  chan struct{}
}

func progress(e *env, verb string, total int64) *progressMeter {
	p := &progressMeter{stop: make(chan struct{}), end: make(chan struct{})}
	go func() {
		defer close(p.end)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if total > 0 {
					fmt.Fprintf(e.stderr, "%s %.1f of %.1f MB\n", verb, mb(p.n.Load()), mb(total))
				} else {
					fmt.Fprintf(e.stderr, "%s %.1f MB\n", verb, mb(p.n.Load()))
				}
			}
		}
	}()
	return p
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func (p *progressMeter) count(r io.Reader) io.Reader { return &countingReader{r: r, n: &p.n} }

func (p *progressMeter) done() {
	close(p.stop)
	<-p.end
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

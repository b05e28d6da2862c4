package boltcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The bbolt file format (go.etcd.io/bbolt, internal/common): pages 0 and 1
// are meta pages, each a 16-byte page header followed by the meta, in
// the machine's byte order.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64 // magic ... txid, checksum
	metaSummed     = 56 // the bytes the checksum covers
	minPages       = 4  // two metas, the freelist, the root bucket
)

// DamagedError is a database file that cannot be opened safely.
type DamagedError struct {
	Path   string
	Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s is damaged: %s", e.Path, e.Reason)
}

// meta is the part of a bbolt meta page Check reads.
type meta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages in use
	txid     uint64
}

// Check reports whether the bbolt file at path looks whole: nil when it
// does or does not exist, a *DamagedError when it is too short for its
// own meta pages or for the pages they say are in use, or when neither
// meta page is valid.
func Check(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return &DamagedError{Path: path, Reason: "the file is empty"}
	}

	m0, err0 := readMeta(f, 0)
	pageSize := int64(os.Getpagesize())
	if err0 == nil {
		pageSize = int64(m0.pageSize)
	}
	m1, err1 := readMeta(f, pageSize)
	var m meta
	switch {
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case err0 == nil:
		m = m0
	case err1 == nil:
		m = m1
	default:
		return &DamagedError{Path: path, Reason: fmt.Sprintf("no valid meta page (%v; %v)", err0, err1)}
	}
	need := int64(m.pgid) * int64(m.pageSize)
	if m.pgid < minPages {
		need = minPages * int64(m.pageSize)
	}
	if size < need {
		return &DamagedError{Path: path, Reason: fmt.Sprintf(
			"the file is %d bytes but its pages in use need %d (%d pages of %d bytes): it was cut short", size, need, m.pgid, m.pageSize)}
	}
	return nil
}

// readMeta reads and validates the meta page at off.
func readMeta(r io.ReaderAt, off int64) (meta, error) {
	var b [pageHeaderSize + metaSize]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		if errors.Is(err, io.EOF) {
			return meta{}, fmt.Errorf("meta page at %d is past the end", off)
		}
		return meta{}, err
	}
	mb := b[pageHeaderSize:]
	le := binary.NativeEndian
	if le.Uint32(mb[0:]) != boltMagic {
		return meta{}, fmt.Errorf("meta page at %d has no bbolt magic", off)
	}
	if v := le.Uint32(mb[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("meta page at %d has version %d", off, v)
	}
	h := fnv.New64a()
	h.Write(mb[:metaSummed])
	if h.Sum64() != le.Uint64(mb[metaSummed:]) {
		return meta{}, fmt.Errorf("meta page at %d fails its checksum", off)
	}
	m := meta{pageSize: le.Uint32(mb[8:]), pgid: le.Uint64(mb[40:]), txid: le.Uint64(mb[48:])}
	if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
		return meta{}, fmt.Errorf("meta page at %d has page size %d", off, m.pageSize)
	}
	return m, nil
}

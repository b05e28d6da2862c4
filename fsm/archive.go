package fsm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/drover-project/drover/state"
)

// archiveMagic opens every operator snapshot archive.
const archiveMagic = "DROVER-SNAPSHOT-ARCHIVE 1\n"

// maxArchiveMetaLine bounds the metadata line, so a damaged file cannot make
// the reader buffer without end.
const maxArchiveMetaLine = 4096

// ArchiveMeta describes an operator snapshot archive.
type ArchiveMeta struct {
	// Index is the state's latest Raft index when the snapshot was taken.
	Index uint64
	// Created is when the snapshot was taken.
	Created time.Time
	// Size is the length of the snapshot stream that follows.
	Size int64
	// SHA256 is the hex digest of that stream.
	SHA256 string
}

// An operator snapshot archive (drover operator snapshot save) is:
//
//	DROVER-SNAPSHOT-ARCHIVE 1\n
//	{"Index":..,"Created":..,"Size":N,"SHA256":"<hex>"}\n
//	N bytes: the FSM snapshot stream (WriteSnapshot), itself CRC-checked
//
// The SHA-256 lets a damaged or truncated file be refused before a restore
// changes anything.

// WriteArchive writes an archive of snap to w and returns its metadata.
func WriteArchive(w io.Writer, snap *state.StateSnapshot, created time.Time) (ArchiveMeta, error) {
	var body bytes.Buffer
	if err := WriteSnapshot(&body, snap); err != nil {
		return ArchiveMeta{}, err
	}
	index, err := snap.LatestIndex()
	if err != nil {
		return ArchiveMeta{}, err
	}
	sum := sha256.Sum256(body.Bytes())
	meta := ArchiveMeta{Index: index, Created: created.UTC(), Size: int64(body.Len()), SHA256: hex.EncodeToString(sum[:])}
	line, err := json.Marshal(meta)
	if err != nil {
		return ArchiveMeta{}, err
	}
	if _, err := io.WriteString(w, archiveMagic); err != nil {
		return ArchiveMeta{}, err
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return ArchiveMeta{}, err
	}
	if _, err := body.WriteTo(w); err != nil {
		return ArchiveMeta{}, err
	}
	return meta, nil
}

// ReadArchive reads an archive, checks its magic, size and SHA-256, and
// returns the metadata and the snapshot stream. It does not parse the
// stream: VerifyArchive does.
func ReadArchive(r io.Reader) (ArchiveMeta, []byte, error) {
	br := bufio.NewReader(r)
	magic := make([]byte, len(archiveMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != archiveMagic {
		return ArchiveMeta{}, nil, fmt.Errorf("%w: not a Drover snapshot archive", ErrCorruptSnapshot)
	}
	line, err := readLine(br, maxArchiveMetaLine)
	if err != nil {
		return ArchiveMeta{}, nil, fmt.Errorf("%w: metadata: %v", ErrCorruptSnapshot, err)
	}
	var meta ArchiveMeta
	if err := json.Unmarshal(line, &meta); err != nil {
		return ArchiveMeta{}, nil, fmt.Errorf("%w: metadata: %v", ErrCorruptSnapshot, err)
	}
	if meta.Size < 0 {
		return ArchiveMeta{}, nil, fmt.Errorf("%w: negative size", ErrCorruptSnapshot)
	}
	body, err := io.ReadAll(io.LimitReader(br, meta.Size+1))
	if err != nil {
		return ArchiveMeta{}, nil, err
	}
	if int64(len(body)) != meta.Size {
		return ArchiveMeta{}, nil, fmt.Errorf("%w: %d bytes of snapshot, metadata says %d", ErrCorruptSnapshot, len(body), meta.Size)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != meta.SHA256 {
		return ArchiveMeta{}, nil, fmt.Errorf("%w: SHA-256 mismatch", ErrCorruptSnapshot)
	}
	return meta, body, nil
}

// VerifyArchive reads and fully parses an archive into a scratch store,
// so that nothing is restored from a file that would fail half way.
func VerifyArchive(r io.Reader) (ArchiveMeta, []byte, *state.StateStore, error) {
	meta, body, err := ReadArchive(r)
	if err != nil {
		return ArchiveMeta{}, nil, nil, err
	}
	store, err := ReadSnapshot(bytes.NewReader(body))
	if err != nil {
		return ArchiveMeta{}, nil, nil, err
	}
	return meta, body, store, nil
}

// VerifyArchiveAt is VerifyArchive over an archive of size bytes in r (a
// file), without holding it in memory: it reads the header, hashes the
// snapshot stream, then parses it into a scratch store. It returns the
// metadata and the stream's offset in r; the stream is
// io.NewSectionReader(r, offset, meta.Size).
func VerifyArchiveAt(r io.ReaderAt, size int64) (ArchiveMeta, int64, error) {
	hr := &countingReader{r: io.NewSectionReader(r, 0, size)}
	br := bufio.NewReaderSize(hr, maxArchiveMetaLine+len(archiveMagic)+1)
	magic := make([]byte, len(archiveMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != archiveMagic {
		return ArchiveMeta{}, 0, fmt.Errorf("%w: not a Drover snapshot archive", ErrCorruptSnapshot)
	}
	line, err := readLine(br, maxArchiveMetaLine)
	if err != nil {
		return ArchiveMeta{}, 0, fmt.Errorf("%w: metadata: %v", ErrCorruptSnapshot, err)
	}
	var meta ArchiveMeta
	if err := json.Unmarshal(line, &meta); err != nil {
		return ArchiveMeta{}, 0, fmt.Errorf("%w: metadata: %v", ErrCorruptSnapshot, err)
	}
	if meta.Size < 0 {
		return ArchiveMeta{}, 0, fmt.Errorf("%w: negative size", ErrCorruptSnapshot)
	}
	offset := hr.n - int64(br.Buffered())
	if got := size - offset; got != meta.Size {
		return ArchiveMeta{}, 0, fmt.Errorf("%w: %d bytes of snapshot, metadata says %d", ErrCorruptSnapshot, got, meta.Size)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, offset, meta.Size)); err != nil {
		return ArchiveMeta{}, 0, err
	}
	if hex.EncodeToString(h.Sum(nil)) != meta.SHA256 {
		return ArchiveMeta{}, 0, fmt.Errorf("%w: SHA-256 mismatch", ErrCorruptSnapshot)
	}
	if _, err := ReadSnapshot(io.NewSectionReader(r, offset, meta.Size)); err != nil {
		return ArchiveMeta{}, 0, err
	}
	return meta, offset, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, isPrefix, err := br.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, frag...)
		if len(line) > max {
			return nil, fmt.Errorf("longer than %d bytes", max)
		}
		if !isPrefix {
			return line, nil
		}
	}
}

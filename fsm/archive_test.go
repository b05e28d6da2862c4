package fsm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
)

func archiveOf(t *testing.T) ([]byte, *state.StateStore) {
	t.Helper()
	s, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := s.UpsertJob(uint64(10+i), mock.Job(), nil); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	meta, err := WriteArchive(&buf, snap, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Index != 59 || meta.Size <= 0 || len(meta.SHA256) != 64 {
		t.Fatalf("meta = %+v", meta)
	}
	return buf.Bytes(), s
}

func TestArchiveRoundTrip(t *testing.T) {
	data, orig := archiveOf(t)
	meta, _, store, err := VerifyArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := orig.Jobs(nil)
	got, err := store.Jobs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || meta.Index != 59 {
		t.Fatalf("restored %d jobs at index %d, want %d at 59", len(got), meta.Index, len(want))
	}
	// From a file-like ReaderAt: the same metadata, and the stream's
	// offset points at the snapshot stream.
	metaAt, off, err := VerifyArchiveAt(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if metaAt != meta || off+meta.Size != int64(len(data)) {
		t.Fatalf("VerifyArchiveAt = %+v at %d, want %+v ending at %d", metaAt, off, meta, len(data))
	}
	if _, err := ReadSnapshot(bytes.NewReader(data[off:])); err != nil {
		t.Fatalf("stream at the offset: %v", err)
	}
}

func TestArchiveRefusesDamage(t *testing.T) {
	data, _ := archiveOf(t)
	headerEnd := bytes.IndexByte(data[len(archiveMagic):], '\n') + len(archiveMagic) + 1
	cases := map[string][]byte{
		"empty":            {},
		"not an archive":   []byte("hello\n"),
		"truncated header": data[:len(archiveMagic)+5],
		"truncated body":   data[:len(data)-100],
		"extra bytes":      append(append([]byte(nil), data...), 0),
		"flipped body":     flip(data, headerEnd+len(data[headerEnd:])/2),
		"flipped sha":      flip(data, bytes.Index(data, []byte(`"SHA256":"`))+12),
	}
	for name, damaged := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := VerifyArchive(bytes.NewReader(damaged)); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("err = %v, want ErrCorruptSnapshot", err)
			}
			if _, _, err := VerifyArchiveAt(bytes.NewReader(damaged), int64(len(damaged))); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("VerifyArchiveAt: err = %v, want ErrCorruptSnapshot", err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x55
	return out
}

package boltcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// fill writes a database of about 2 MB and returns its path and size.
func fill(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := b.Put([]byte(fmt.Sprintf("k%05d", i)), make([]byte, 1000)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, st.Size()
}

func TestCheck(t *testing.T) {
	path, size := fill(t)
	if err := Check(path); err != nil {
		t.Fatalf("a whole database: %v", err)
	}
	if err := Check(filepath.Join(t.TempDir(), "none.db")); err != nil {
		t.Fatalf("a missing file: %v", err)
	}
	for name, cut := range map[string]int64{"half": size / 2, "one page": 4096, "100 bytes": 100, "empty": 0} {
		t.Run(name, func(t *testing.T) {
			p, _ := fill(t)
			if err := os.Truncate(p, cut); err != nil {
				t.Fatal(err)
			}
			err := Check(p)
			var de *DamagedError
			if !errors.As(err, &de) || de.Path != p || !strings.Contains(err.Error(), p) {
				t.Fatalf("cut to %d of %d bytes: %v", cut, size, err)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		p, _ := fill(t)
		f, _ := os.OpenFile(p, os.O_WRONLY, 0)
		f.WriteAt(make([]byte, 8192), 0) // both meta pages
		f.Close()
		if err := Check(p); err == nil || !strings.Contains(err.Error(), "no valid meta page") {
			t.Fatalf("zeroed metas: %v", err)
		}
	})
}

package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/boltcheck"
	"github.com/drover-project/drover/structs"
)

// TestOpenDamaged: a state file cut short is an error naming it, not a
// crash in bbolt.
func TestOpenDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		a := &structs.Allocation{ID: structs.GenerateUUID(), Name: strings.Repeat("x", 2000)}
		if err := db.PutAlloc(a); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	var de *boltcheck.DamagedError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a file cut from %d to %d bytes: %v", st.Size(), st.Size()/2, err)
	}
}

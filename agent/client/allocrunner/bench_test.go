package allocrunner

import (
	"path/filepath"
	"testing"

	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/structs"
)

// BenchmarkMockBatchAlloc measures one allocation's whole life on a
// client: directories, log pumps, a mock task that exits at once, every
// task event saved in the bbolt state, the allocation complete.
func BenchmarkMockBatchAlloc(b *testing.B) {
	dir := b.TempDir()
	db, err := clientstate.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	drivers := testDrivers()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := testAlloc(structs.JobTypeBatch, nil, &structs.Task{Name: "m", Driver: "mock_driver"})
		ar, err := New(Config{Alloc: a, AllocRoot: filepath.Join(dir, "alloc"), Drivers: drivers, StateDB: db})
		if err != nil {
			b.Fatal(err)
		}
		ar.Run()
		<-ar.DoneCh()
		if got := ar.Alloc().ClientStatus; got != structs.AllocClientStatusComplete {
			b.Fatalf("status %s", got)
		}
	}
}

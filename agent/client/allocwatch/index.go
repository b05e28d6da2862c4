package allocwatch

import (
	"time"

	"github.com/drover-project/drover/structs"
)

// Index keeps the index of an allocation watch and decides which answers
// may be acted on. An answer at or above the index sent comes from a
// server that has applied everything up to that index, so what it no
// longer lists is really gone. An answer below it may be a lagging
// server's (a stale read that timed out before the server caught up) or
// the servers' after a collection or a cluster rebuild: such an answer is
// dropped and asked again of the leader, at once (MinQueryIndex 0), and
// the leader's answer is taken as is. The zero value asks the leader.
type Index struct {
	index   uint64 // of the last answer acted on; 0 before the first
	confirm bool   // the next query goes to the leader, unblocked
}

// Options returns the query options of the next query.
func (w *Index) Options(region string, maxWait time.Duration) structs.QueryOptions {
	if w.index == 0 || w.confirm {
		return structs.QueryOptions{Region: region}
	}
	return structs.QueryOptions{Region: region, MinQueryIndex: w.index, MaxQueryTime: maxWait, AllowStale: true}
}

// Accept reports whether an answer at index may be acted on; if not, the
// next query confirms it with the leader.
func (w *Index) Accept(index uint64) bool {
	if index < w.index && !w.confirm {
		w.confirm = true
		return false
	}
	return true
}

// Done records the index of an answer that was acted on.
func (w *Index) Done(index uint64) { w.index, w.confirm = index, false }

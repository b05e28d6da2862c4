package blockedevals

import (
	"context"
	"time"

	"github.com/drover-project/drover/structs"
)

// addDuplicateLocked records an evaluation replaced by a newer one for the
// same job and wakes GetDuplicates callers.
func (b *BlockedEvals) addDuplicateLocked(e *structs.Evaluation) {
	b.duplicates = append(b.duplicates, e)
	close(b.dupSignal)
	b.dupSignal = make(chan struct{})
}

// GetDuplicates removes and returns the evaluations superseded so far,
// waiting up to timeout for the first one (timeout <= 0 does not wait).
// It returns nil if there are none. The leader cancels them through Raft.
func (b *BlockedEvals) GetDuplicates(timeout time.Duration) []*structs.Evaluation {
	if timeout <= 0 {
		return b.getDuplicates(closedChan)
	}
	expired := make(chan struct{})
	t := b.clock.AfterFunc(timeout, func() { close(expired) })
	defer t.Stop()
	return b.getDuplicates(expired)
}

// GetDuplicatesContext is GetDuplicates bounded by ctx; it returns nil
// when ctx ends first.
func (b *BlockedEvals) GetDuplicatesContext(ctx context.Context) []*structs.Evaluation {
	return b.getDuplicates(ctx.Done())
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (b *BlockedEvals) getDuplicates(done <-chan struct{}) []*structs.Evaluation {
	for {
		b.mu.Lock()
		if len(b.duplicates) > 0 {
			out := b.duplicates
			b.duplicates = nil
			b.mu.Unlock()
			return out
		}
		signal := b.dupSignal
		b.mu.Unlock()
		select {
		case <-signal:
		case <-done:
			return nil
		}
	}
}

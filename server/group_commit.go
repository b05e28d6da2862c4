package server

import "sync"

// groupCommit gathers the work of concurrent callers into one Raft entry:
// the first caller starts a writer; callers that arrive while it writes
// join the next batch, and each waits for the entry its work went into.
// So many clients reporting at once cost few entries. B is the batch
// (what one entry carries); write turns a batch into its entry.
type groupCommit[B any] struct {
	write func(*B) (uint64, error)

	mu      sync.Mutex
	next    *pendingCommit[B] // batch being gathered; guarded by mu
	running bool              // a writer goroutine is active; guarded by mu
}

type pendingCommit[B any] struct {
	batch B
	done  chan struct{} // closed once index and err are set
	index uint64
	err   error
}

// submit adds work to the next batch (add appends it, under the lock) and
// waits for that batch to be written.
func (g *groupCommit[B]) submit(add func(*B)) (uint64, error) {
	g.mu.Lock()
	if g.next == nil {
		g.next = &pendingCommit[B]{done: make(chan struct{})}
	}
	p := g.next
	add(&p.batch)
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	<-p.done
	return p.index, p.err
}

// run writes batches until none is waiting.
func (g *groupCommit[B]) run() {
	for {
		g.mu.Lock()
		p := g.next
		g.next = nil
		if p == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		p.index, p.err = g.write(&p.batch)
		close(p.done)
	}
}

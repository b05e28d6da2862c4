package evalbroker

import (
	"container/heap"
	"time"

	"github.com/drover-project/drover/structs"
)

// readyItem is one evaluation in a ready queue; seq is its arrival number.
type readyItem struct {
	eval *structs.Evaluation
	seq  uint64
}

// readyQueue is a heap: highest Priority first, then lowest CreateIndex,
// then earliest arrival. Use it only through push, pop and peek.
type readyQueue []readyItem

func (q readyQueue) Len() int { return len(q) }

func (q readyQueue) Less(i, j int) bool {
	a, b := q[i].eval, q[j].eval
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex < b.CreateIndex
	}
	return q[i].seq < q[j].seq
}

func (q readyQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *readyQueue) Push(x any) { *q = append(*q, x.(readyItem)) }

func (q *readyQueue) Pop() any {
	old := *q
	n := len(old) - 1
	it := old[n]
	old[n] = readyItem{}
	*q = old[:n]
	return it
}

func (q *readyQueue) push(eval *structs.Evaluation, seq uint64) {
	heap.Push(q, readyItem{eval: eval, seq: seq})
}

func (q *readyQueue) pop() *structs.Evaluation { return heap.Pop(q).(readyItem).eval }

func (q readyQueue) peek() *structs.Evaluation { return q[0].eval }

// delayedItem is an evaluation held until due, then enqueued on queue.
type delayedItem struct {
	eval  *structs.Evaluation
	due   time.Time
	queue string
	seq   uint64
	// coverable: counted as waiting for delivery (see Cover).
	coverable bool
}

// delayQueue is a min-heap on due time, then arrival.
type delayQueue []delayedItem

func (q delayQueue) Len() int { return len(q) }

func (q delayQueue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}

func (q delayQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *delayQueue) Push(x any) { *q = append(*q, x.(delayedItem)) }

func (q *delayQueue) Pop() any {
	old := *q
	n := len(old) - 1
	it := old[n]
	old[n] = delayedItem{}
	*q = old[:n]
	return it
}

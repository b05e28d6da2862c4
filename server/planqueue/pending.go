package planqueue

import (
	"context"
	"sync"
	"time"

	"github.com/drover-project/drover/structs"
)

// PendingPlan is a queued plan and the future of its result. The submitter
// calls Wait; the applier calls Respond.
type PendingPlan struct {
	// Plan is the submitted plan. Read-only for everyone but the applier.
	Plan *structs.Plan
	// EnqueueTime is when Enqueue accepted it.
	EnqueueTime time.Time

	queue *Queue
	seq   uint64 // arrival order in queue

	once   sync.Once
	done   chan struct{} // closed once result and err are set
	result *structs.PlanResult
	err    error
}

// Respond answers the plan. Only the first call has any effect.
func (p *PendingPlan) Respond(result *structs.PlanResult, err error) {
	p.once.Do(func() {
		p.result, p.err = result, err
		close(p.done)
		p.queue.forget(p)
	})
}

// Wait blocks until the plan is answered and returns the answer.
func (p *PendingPlan) Wait() (*structs.PlanResult, error) {
	<-p.done
	return p.result, p.err
}

// WaitContext is Wait bounded by ctx; when ctx ends first it returns
// (nil, ctx.Err()). The plan is not withdrawn: it may still be applied.
func (p *PendingPlan) WaitContext(ctx context.Context) (*structs.PlanResult, error) {
	select {
	case <-p.done:
		return p.result, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// planHeap orders pending plans: highest priority first, then arrival.
type planHeap []*PendingPlan

func (h planHeap) Len() int { return len(h) }

func (h planHeap) Less(i, j int) bool {
	if h[i].Plan.Priority != h[j].Plan.Priority {
		return h[i].Plan.Priority > h[j].Plan.Priority
	}
	return h[i].seq < h[j].seq
}

func (h planHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *planHeap) Push(x any) { *h = append(*h, x.(*PendingPlan)) }

func (h *planHeap) Pop() any {
	old := *h
	n := len(old) - 1
	p := old[n]
	old[n] = nil
	*h = old[:n]
	return p
}

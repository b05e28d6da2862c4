package evalbroker

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/structs"
)

const (
	benchEvals = 100_000
	benchJobs  = 1_000
)

// benchEvalSet builds evals spread round-robin over benchJobs jobs and the
// three scheduler types, with rising create/modify indexes.
func benchEvalSet() []*structs.Evaluation {
	types := []string{"service", "batch", "system"}
	out := make([]*structs.Evaluation, benchEvals)
	for i := range out {
		job := i % benchJobs
		out[i] = &structs.Evaluation{
			ID: fmt.Sprintf("eval-%d", i), Namespace: "default", JobID: fmt.Sprintf("job-%d", job),
			Priority: 1 + job%100, Type: types[job%len(types)], Status: structs.EvalStatusPending,
			CreateIndex: uint64(i + 1), ModifyIndex: uint64(i + 1),
		}
	}
	return out
}

// BenchmarkSteadyState delivers every one of 100,000 evals across 1,000
// jobs: each job has one eval in the broker at a time, and acking it
// enqueues that job's next eval, so nothing is superseded.
func BenchmarkSteadyState(b *testing.B) {
	evals := benchEvalSet()
	byID := make(map[string]int, len(evals))
	for i, e := range evals {
		byID[e.ID] = i
	}
	types := []string{"service", "batch", "system"}
	b.ReportAllocs()
	for b.Loop() {
		br, _ := testBroker(b, nil)
		for _, e := range evals[:benchJobs] {
			br.Enqueue(e)
		}
		for range benchEvals {
			e, tok := mustDequeue(b, br, types...)
			mustAck(b, br, e, tok)
			if next := byID[e.ID] + benchJobs; next < benchEvals {
				br.Enqueue(evals[next]) // the same job's next eval
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvals), "ns/eval")
}

// BenchmarkBurst enqueues all 100,000 evals at once, then drains: per job,
// the first is delivered, the newest waiter is released on ack and the
// other 98 are superseded (cancelable).
func BenchmarkBurst(b *testing.B) {
	evals := benchEvalSet()
	types := []string{"service", "batch", "system"}
	b.ReportAllocs()
	for b.Loop() {
		br, _ := testBroker(b, nil)
		for _, e := range evals {
			br.Enqueue(e)
		}
		delivered := 0
		for {
			e, tok := tryDequeue(b, br, types...)
			if e == nil {
				break
			}
			mustAck(b, br, e, tok)
			delivered++
		}
		if canceled := len(br.Cancelable(0)); delivered+canceled != benchEvals || delivered != 2*benchJobs {
			b.Fatalf("delivered %d + canceled %d, want %d delivered of %d", delivered, canceled, 2*benchJobs, benchEvals)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvals), "ns/eval")
}

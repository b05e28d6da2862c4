package structs

import (
	"testing"
)

// codecBenchCase is one message the servers encode and decode on a hot
// path, with the type it is written under in Raft.
type codecBenchCase struct {
	name string
	t    MessageType
	msg  any
	out  func() any // a fresh value to decode into
}

func codecBenchCases() []codecBenchCase {
	job := fixtureJob()
	return []codecBenchCase{
		{"PlanResults100", ApplyPlanResultsRequestType, fixturePlanResults(100),
			func() any { return new(ApplyPlanResultsRequest) }},
		{"PlanResults100Grouped", ApplyPlanResultsRequestType, groupedPlanResults(100),
			func() any { return new(ApplyPlanResultsRequest) }},
		{"JobRegister3Groups", JobRegisterRequestType,
			&JobRegisterRequest{Job: job, Eval: NewEval(job, EvalTriggerJobRegister, fixtureTime)},
			func() any { return new(JobRegisterRequest) }},
		{"NodeRegister", NodeRegisterRequestType, &NodeRegisterRequest{Node: fixtureNode()},
			func() any { return new(NodeRegisterRequest) }},
		{"AllocClientUpdate100", AllocClientUpdateRequestType, fixtureAllocUpdates(100),
			func() any { return new(AllocUpdateRequest) }},
		// As a simulator sends it (an RPC, never a Raft entry): the
		// secrets of the 100 nodes the updates are on.
		{"AllocClientUpdate100Secrets", AllocClientUpdateRequestType, fixtureAllocUpdatesWithSecrets(100),
			func() any { return new(AllocUpdateRequest) }},
	}
}

// BenchmarkCodec measures Encode (a Raft entry: type byte and msgpack)
// and Decode (into a fresh value, as the FSM and RPC server do) of the
// messages that dominate a busy leader. "bytes/msg" is the encoded size.
//
//	go test -run '^$' -bench Codec -benchmem ./structs/
func BenchmarkCodec(b *testing.B) {
	for _, c := range codecBenchCases() {
		buf, err := Encode(c.t, c.msg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Encode(c.t, c.msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(buf)), "bytes/msg")
		})
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := Decode(buf[1:], c.out()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(buf)), "bytes/msg")
		})
	}
}

// groupedPlanResults is fixturePlanResults(n) as the leader writes it:
// compacted into allocation groups.
func groupedPlanResults(n int) *ApplyPlanResultsRequest {
	req := fixturePlanResults(n)
	req.Compact()
	return req
}

// fixtureAllocUpdatesWithSecrets is fixtureAllocUpdates(n) with the
// secret of each allocation's node, as agent/sim batches them.
func fixtureAllocUpdatesWithSecrets(n int) *AllocUpdateRequest {
	req := fixtureAllocUpdates(n)
	req.NodeSecrets = make(map[string]string, n)
	for i, a := range req.Alloc {
		req.NodeSecrets[a.NodeID] = fixtureID("s", i)
	}
	return req
}

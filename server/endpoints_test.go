package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// devServer starts a single in-memory server that bootstraps alone and
// waits until it leads.
func devServer(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Config{
		Name: "dev", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		var l string
		// Established: the leader hooks ran (heartbeat timers armed, which
		// Node.Register's NumNodes counts), not only the barrier.
		if s.LeaderEstablishedForTest() && s.RPC("Status.Leader", &structs.GenericRequest{}, &l) == nil && l == s.RPCAddr() {
			// A consistent read proves the leader is ready.
			var resp structs.JobListResponse
			if err := s.RPC("Job.List", &structs.JobListRequest{}, &resp); err == nil {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("dev server did not become leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestJobRegisterAndRead(t *testing.T) {
	s := devServer(t)
	job := mock.Job()
	job.Namespace = ""
	job.Priority = 0
	orig := job.Copy()

	var resp structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.EvalCreateIndex == 0 || resp.JobModifyIndex != resp.Index {
		t.Fatalf("response: %+v", resp)
	}
	if job.Namespace != orig.Namespace || job.Priority != orig.Priority {
		t.Fatal("Register modified the caller's job")
	}

	var got structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Job == nil || got.Job.Namespace != structs.DefaultNamespace || got.Job.Priority != structs.DefaultPriority {
		t.Fatalf("stored job not canonicalized: %+v", got.Job)
	}
	if got.Index != resp.JobModifyIndex || !got.KnownLeader {
		t.Fatalf("meta %+v, want index %d", got.QueryMeta, resp.JobModifyIndex)
	}

	var ev structs.SingleEvalResponse
	if err := s.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: resp.EvalID}, &ev); err != nil {
		t.Fatal(err)
	}
	// Workers may already have processed the eval: what matters is that
	// it was written in the job's own Raft entry.
	if ev.Eval == nil || ev.Eval.JobID != job.ID || ev.Eval.TriggeredBy != structs.EvalTriggerJobRegister ||
		ev.Eval.CreateIndex != resp.JobModifyIndex || resp.EvalCreateIndex != resp.JobModifyIndex {
		t.Fatalf("eval %+v not written with the job at index %d", ev.Eval, resp.JobModifyIndex)
	}

	// Missing objects: nil with a non-zero index, not an error.
	var missing structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: "nope"}, &missing); err != nil {
		t.Fatal(err)
	}
	if missing.Job != nil || missing.Index == 0 {
		t.Fatalf("missing job: %+v", missing)
	}
	var missingEval structs.SingleEvalResponse
	if err := s.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: "nope"}, &missingEval); err != nil {
		t.Fatal(err)
	}
	if missingEval.Eval != nil || missingEval.Index == 0 {
		t.Fatalf("missing eval: %+v", missingEval)
	}
}

func TestJobRegisterErrors(t *testing.T) {
	s := devServer(t)
	existing := mock.Job()
	var first structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: existing}, &first); err != nil {
		t.Fatal(err)
	}

	huge := mock.Job()
	huge.Meta = map[string]string{"blob": strings.Repeat("x", structs.MaxJobSize)}
	nullGroup := mock.Job()
	nullGroup.TaskGroups = append(nullGroup.TaskGroups, nil)
	retyped := existing.Copy()
	retyped.Type = structs.JobTypeBatch
	retyped.TaskGroups[0].Migrate = nil // only service jobs take one

	tests := []struct {
		name string
		req  *structs.JobRegisterRequest
		code structs.ErrorCode
	}{
		{"no job", &structs.JobRegisterRequest{}, structs.ErrCodeInvalid},
		{"invalid job", &structs.JobRegisterRequest{Job: &structs.Job{ID: "x y"}}, structs.ErrCodeInvalid},
		{"null group", &structs.JobRegisterRequest{Job: nullGroup}, structs.ErrCodeInvalid},
		{"too large", &structs.JobRegisterRequest{Job: huge}, structs.ErrCodeTooLarge},
		{"enforce index on new job", &structs.JobRegisterRequest{Job: mock.Job(), EnforceIndex: true, JobModifyIndex: 5}, structs.ErrCodeConflict},
		{"enforce 0 on existing job", &structs.JobRegisterRequest{Job: existing.Copy(), EnforceIndex: true}, structs.ErrCodeConflict},
		{"enforce stale index", &structs.JobRegisterRequest{Job: existing.Copy(), EnforceIndex: true, JobModifyIndex: first.JobModifyIndex - 1}, structs.ErrCodeConflict},
		{"type change", &structs.JobRegisterRequest{Job: retyped}, structs.ErrCodeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.JobRegisterResponse
			err := s.RPC("Job.Register", tc.req, &resp)
			if got := structs.CodeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
		})
	}

	t.Run("type change names the field", func(t *testing.T) {
		for _, call := range []struct {
			method     string
			args, resp any
		}{
			{"Job.Register", &structs.JobRegisterRequest{Job: retyped}, &structs.JobRegisterResponse{}},
			{"Job.Plan", &structs.JobPlanRequest{Job: retyped}, &structs.JobPlanResponse{}},
		} {
			err := s.RPC(call.method, call.args, call.resp)
			var v *structs.ValidationError
			if !errors.As(err, &v) || len(v.Errors) != 1 || v.Errors[0].Field != "Type" {
				t.Fatalf("%s of a type change: %v", call.method, err)
			}
		}
	})

	t.Run("enforce current index", func(t *testing.T) {
		var resp structs.JobRegisterResponse
		changed := existing.Copy()
		changed.Priority = 70 // an unchanged spec would write nothing
		req := &structs.JobRegisterRequest{Job: changed, EnforceIndex: true, JobModifyIndex: first.JobModifyIndex}
		if err := s.RPC("Job.Register", req, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.JobModifyIndex <= first.JobModifyIndex {
			t.Fatalf("job modify index %d, want > %d", resp.JobModifyIndex, first.JobModifyIndex)
		}
	})
}

func TestJobDeregister(t *testing.T) {
	s := devServer(t)
	job := mock.Job()
	var reg structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatal(err)
	}

	var resp structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: job.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.Index <= reg.Index {
		t.Fatalf("deregister response %+v", resp)
	}
	var got structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Job == nil || !got.Job.Stop {
		t.Fatalf("stopped job: %+v", got.Job)
	}
	var ev structs.SingleEvalResponse
	if err := s.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: resp.EvalID}, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Eval == nil || ev.Eval.TriggeredBy != structs.EvalTriggerJobDeregister {
		t.Fatalf("deregister eval %+v", ev.Eval)
	}

	// Purge removes it.
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: job.ID, Purge: true}, &resp); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Job != nil {
		t.Fatalf("purged job still there: %+v", got.Job)
	}

	err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "missing"}, &resp)
	if !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("deregister missing job: %v, want not_found", err)
	}
}

func TestJobListPrefix(t *testing.T) {
	s := devServer(t)
	for _, id := range []string{"api", "api-v2", "web"} {
		job := mock.Job()
		job.ID, job.Name = id, id
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"api", "api-v2", "web"}},
		{"api", []string{"api", "api-v2"}},
		{"w", []string{"web"}},
		{"zzz", nil},
	}
	for _, tc := range tests {
		t.Run("prefix="+tc.prefix, func(t *testing.T) {
			args := &structs.JobListRequest{}
			args.Prefix = tc.prefix
			var resp structs.JobListResponse
			if err := s.RPC("Job.List", args, &resp); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, stub := range resp.Jobs {
				got = append(got, stub.ID)
				if stub.JobSummary == nil {
					t.Fatalf("stub %s has no summary", stub.ID)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if resp.Index == 0 {
				t.Fatal("zero index")
			}
		})
	}
}

func TestBlockingQueryWakesOnWrite(t *testing.T) {
	s := devServer(t)
	var list structs.JobListResponse
	if err := s.RPC("Job.List", &structs.JobListRequest{}, &list); err != nil {
		t.Fatal(err)
	}

	type result struct {
		resp structs.SingleJobResponse
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		args := &structs.JobSpecificRequest{JobID: "late"}
		args.MinQueryIndex = list.Index
		args.MaxQueryTime = 10 * time.Second
		start := time.Now()
		var r result
		r.err = s.RPC("Job.GetJob", args, &r.resp)
		r.took = time.Since(start)
		done <- r
	}()

	select {
	case r := <-done:
		t.Fatalf("blocking query returned before any write: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	job := mock.Job()
	job.ID, job.Name = "late", "late"
	var reg structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.resp.Job == nil || r.resp.Index != reg.JobModifyIndex {
		t.Fatalf("woken query: job %v index %d, want index %d", r.resp.Job, r.resp.Index, reg.JobModifyIndex)
	}

	// A blocking query with nothing to wake it returns after MaxQueryTime
	// (plus at most 1/16 jitter) with the unchanged index.
	args := &structs.JobSpecificRequest{JobID: "never"}
	args.MinQueryIndex = r.resp.Index + 100
	args.MaxQueryTime = 100 * time.Millisecond
	start := time.Now()
	var resp structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", args, &resp); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("timed-out query took %v", took)
	}
}

// TestBlockingQueryEndsWithCaller checks that a blocking read whose
// caller's context ends (an HTTP client that disconnected) returns then,
// not at its wait time.
func TestBlockingQueryEndsWithCaller(t *testing.T) {
	s := devServer(t)
	var list structs.JobListResponse
	if err := s.RPC("Job.List", &structs.JobListRequest{}, &list); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := &structs.JobSpecificRequest{JobID: "never"}
	args.MinQueryIndex = list.Index + 100
	args.MaxQueryTime = time.Minute
	args.WithContext(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	var resp structs.SingleJobResponse
	err := s.RPC("Job.GetJob", args, &resp)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the query ended %v after its caller's context", took)
	}
}

func TestNodeEndpoints(t *testing.T) {
	s := devServer(t)
	node := mock.Node()
	node.Status = ""
	var resp structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.HeartbeatTTL <= 0 || resp.NodeModifyIndex == 0 || len(resp.Servers) != 1 ||
		resp.Servers[0].RPCAdvertiseAddr != s.RPCAddr() || resp.NumNodes != 1 {
		t.Fatalf("register response %+v", resp)
	}

	var got structs.SingleNodeResponse
	if err := s.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: node.ID}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Node == nil || got.Node.Status != structs.NodeStatusInit || got.Node.SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatalf("node not canonicalized: %+v", got.Node)
	}

	var list structs.NodeListResponse
	args := &structs.NodeListRequest{}
	args.Prefix = node.ID[:4]
	if err := s.RPC("Node.List", args, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Nodes) != 1 || list.Nodes[0].ID != node.ID {
		t.Fatalf("node list %+v", list.Nodes)
	}

	tests := []struct {
		name string
		node func() *structs.Node
		code structs.ErrorCode
	}{
		{"no node", func() *structs.Node { return nil }, structs.ErrCodeInvalid},
		{"no secret", func() *structs.Node { n := mock.Node(); n.SecretID = ""; return n }, structs.ErrCodeInvalid},
		{"invalid", func() *structs.Node { n := mock.Node(); n.Name = ""; return n }, structs.ErrCodeInvalid},
		{"wrong secret", func() *structs.Node { n := node.Copy(); n.SecretID = "other"; return n }, structs.ErrCodePermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.NodeUpdateResponse
			err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: tc.node()}, &resp)
			if structs.CodeOf(err) != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
		})
	}
}

func TestOperatorRaft(t *testing.T) {
	s := devServer(t)
	var conf structs.RaftConfigurationResponse
	if err := s.RPC("Operator.RaftGetConfiguration", &structs.GenericRequest{}, &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Servers) != 1 {
		t.Fatalf("servers %+v", conf.Servers)
	}
	srv := conf.Servers[0]
	if !srv.Leader || !srv.Voter || srv.Address != s.RPCAddr() || srv.Node != "dev" || srv.ID == "" {
		t.Fatalf("server entry %+v", srv)
	}

	var resp structs.GenericResponse
	err := s.RPC("Operator.RaftRemovePeer", &structs.RaftPeerRequest{ID: "nobody"}, &resp)
	if !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("remove unknown peer: %v", err)
	}
	err = s.RPC("Operator.RaftRemovePeer", &structs.RaftPeerRequest{Address: "127.0.0.1:1"}, &resp)
	if !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("remove unknown address: %v", err)
	}
	err = s.RPC("Operator.RaftRemovePeer", &structs.RaftPeerRequest{}, &resp)
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("remove with no name: %v", err)
	}
}

func TestInProcessRPCChecks(t *testing.T) {
	s := devServer(t)
	var l string
	err := s.RPC("Status.Nope", &structs.GenericRequest{}, &l)
	if structs.CodeOf(err) != structs.ErrCodeUnsupported {
		t.Fatalf("unknown method: %v", err)
	}
	var wrong structs.JobListResponse
	err = s.RPC("Status.Leader", &structs.GenericRequest{}, &wrong)
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("wrong reply type: %v", err)
	}

	// The caller's request is not marked forwarded by routing.
	args := &structs.JobSpecificRequest{JobID: "x"}
	var resp structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", args, &resp); err != nil {
		t.Fatal(err)
	}
	if args.Forwarded {
		t.Fatal("caller's args were marked forwarded")
	}
}

func TestShutdownIdempotent(t *testing.T) {
	s := devServer(t)
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp)
	if err == nil {
		t.Fatal("write after shutdown succeeded")
	}
}

// A blocking job list returns when only a job's summary changes (the list
// carries summaries), with the summary table's index.
func TestJobListBlocksOnSummaryChange(t *testing.T) {
	s := devServer(t)
	job := mock.Job()
	var reg structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatal(err)
	}
	var list structs.JobListResponse
	if err := s.RPC("Job.List", &structs.JobListRequest{}, &list); err != nil {
		t.Fatal(err)
	}
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	node := mock.Node()
	write := list.Index + 100
	go func() {
		time.Sleep(50 * time.Millisecond)
		// Straight into the state store: only the allocs and summary
		// tables change, the jobs table does not.
		if err := s.State().UpsertAllocs(write, []*structs.Allocation{mock.Alloc(stored, node)}); err != nil {
			t.Error(err)
		}
	}()
	// A worker's own summary write may wake an earlier round; follow the
	// index until the summary write shows (each round blocks up to 5 s:
	// a list that ignored summaries would time out at the jobs index).
	var got structs.JobListResponse
	start := time.Now()
	for min := list.Index; min < write && time.Since(start) < 4*time.Second; min = got.Index {
		args := &structs.JobListRequest{}
		args.MinQueryIndex = min
		args.MaxQueryTime = 5 * time.Second
		got = structs.JobListResponse{}
		if err := s.RPC("Job.List", args, &got); err != nil {
			t.Fatal(err)
		}
	}
	if got.Index != write {
		t.Fatalf("list index %d after %v, want %d (the summary write)", got.Index, time.Since(start), write)
	}
	if len(got.Jobs) != 1 || got.Jobs[0].JobSummary == nil {
		t.Fatalf("jobs %+v", got.Jobs)
	}
}

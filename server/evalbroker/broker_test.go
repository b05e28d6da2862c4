package evalbroker

import (
	"errors"
	"testing"

	"github.com/drover-project/drover/structs"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
	}{
		{"zero nack timeout", func(c *Config) { c.NackTimeout = 0 }},
		{"negative delay", func(c *Config) { c.InitialNackDelay = -1 }},
		{"zero delivery limit", func(c *Config) { c.DeliveryLimit = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			if _, err := New(cfg); !errors.Is(err, &structs.Error{Code: structs.ErrCodeInvalid}) {
				t.Fatalf("New: err = %v, want invalid", err)
			}
		})
	}
}

// evalSpec describes one evaluation in an ordering table.
type evalSpec struct {
	name        string
	priority    int
	createIndex uint64
	typ         string
}

func TestDequeueOrder(t *testing.T) {
	cases := []struct {
		name  string
		evals []evalSpec
		types []string
		want  []string
	}{
		{
			name: "higher priority first",
			evals: []evalSpec{
				{"low", 10, 1, "service"}, {"high", 90, 2, "service"}, {"mid", 50, 3, "service"},
			},
			types: []string{"service"},
			want:  []string{"high", "mid", "low"},
		},
		{
			name: "FIFO by create index within a priority",
			evals: []evalSpec{
				{"c", 50, 30, "service"}, {"a", 50, 10, "service"}, {"b", 50, 20, "service"},
			},
			types: []string{"service"},
			want:  []string{"a", "b", "c"},
		},
		{
			name: "arrival order when create index ties",
			evals: []evalSpec{
				{"first", 50, 0, "batch"}, {"second", 50, 0, "batch"}, {"third", 50, 0, "batch"},
			},
			types: []string{"batch"},
			want:  []string{"first", "second", "third"},
		},
		{
			name: "highest head across types",
			evals: []evalSpec{
				{"svc", 50, 1, "service"}, {"bat", 70, 2, "batch"}, {"sys", 60, 3, "system"},
			},
			types: []string{"service", "batch", "system"},
			want:  []string{"bat", "sys", "svc"},
		},
		{
			name: "only requested types",
			evals: []evalSpec{
				{"svc", 50, 1, "service"}, {"core", 200, 2, "_core"},
			},
			types: []string{"service"},
			want:  []string{"svc"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := testBroker(t, nil)
			names := map[string]string{}
			for i, s := range tc.evals {
				e := mockEval("job-"+s.name, s.priority, s.typ)
				e.CreateIndex = s.createIndex
				e.ModifyIndex = uint64(i)
				names[e.ID] = s.name
				b.Enqueue(e)
			}
			for _, want := range tc.want {
				e, _ := mustDequeue(t, b, tc.types...)
				if got := names[e.ID]; got != want {
					t.Fatalf("dequeued %q, want %q", got, want)
				}
			}
			mustBeEmpty(t, b, tc.types...)
		})
	}
}

func TestDequeueRoundRobinOnPriorityTie(t *testing.T) {
	b, _ := testBroker(t, nil)
	for range 4 {
		b.Enqueue(mockEval(structs.GenerateUUID(), 50, "service"))
		b.Enqueue(mockEval(structs.GenerateUUID(), 50, "batch"))
	}
	var prev string
	for i := range 8 {
		e, _ := mustDequeue(t, b, "service", "batch")
		if e.Type == prev {
			t.Fatalf("dequeue %d took %s twice in a row on a priority tie", i, e.Type)
		}
		prev = e.Type
	}
}

func TestOneOutstandingPerJob(t *testing.T) {
	cases := []struct {
		name       string
		modify     []uint64 // ModifyIndex of each eval for the job, in enqueue order
		wantNext   int      // index of the eval released after the first is acked
		wantCancel []int
	}{
		{"single waiter released", []uint64{1, 2}, 1, nil},
		{"newest waiter supersedes older", []uint64{1, 2, 3, 4}, 3, []int{1, 2}},
		{"newest by modify index, not arrival", []uint64{1, 9, 5}, 1, []int{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := testBroker(t, nil)
			var evals []*structs.Evaluation
			for _, mi := range tc.modify {
				e := mockEval("web", 50, "service")
				e.CreateIndex, e.ModifyIndex = mi, mi
				evals = append(evals, e)
				b.Enqueue(e)
			}
			other := mockEval("db", 50, "service")
			other.CreateIndex = 100
			b.Enqueue(other)

			first, tok := mustDequeue(t, b, "service")
			second, tok2 := mustDequeue(t, b, "service")
			if first != evals[0] || second != other {
				t.Fatalf("dequeued %s, %s; want first web eval then db", first.ID, second.ID)
			}
			mustBeEmpty(t, b, "service")
			if got := b.Stats().TotalPending; got != len(evals)-1 {
				t.Fatalf("TotalPending = %d, want %d", got, len(evals)-1)
			}
			mustAck(t, b, first, tok)
			mustAck(t, b, second, tok2)

			next, _ := mustDequeue(t, b, "service")
			if next != evals[tc.wantNext] {
				t.Fatalf("released %s, want eval %d", next.ID, tc.wantNext)
			}
			mustBeEmpty(t, b, "service")
			assertCancelable(t, b, evals, tc.wantCancel)
		})
	}
}

func assertCancelable(t *testing.T, b *Broker, evals []*structs.Evaluation, want []int) {
	t.Helper()
	if got := b.Stats().TotalCancelable; got != len(want) {
		t.Fatalf("TotalCancelable = %d, want %d", got, len(want))
	}
	got := b.Cancelable(0)
	if len(got) != len(want) {
		t.Fatalf("Cancelable returned %d evals, want %d", len(got), len(want))
	}
	for i, idx := range want {
		if got[i] != evals[idx] {
			t.Fatalf("cancelable[%d] = %s, want eval %d", i, got[i].ID, idx)
		}
	}
	if rest := b.Cancelable(10); len(rest) != 0 {
		t.Fatalf("Cancelable returned %d more after draining", len(rest))
	}
}

func TestCancelableBatches(t *testing.T) {
	b, _ := testBroker(t, nil)
	for i := range 6 {
		e := mockEval("web", 50, "service")
		e.ModifyIndex = uint64(i + 1)
		b.Enqueue(e)
	}
	e, tok := mustDequeue(t, b, "service")
	mustAck(t, b, e, tok)
	if got := len(b.Cancelable(3)); got != 3 {
		t.Fatalf("first batch = %d, want 3", got)
	}
	if got := len(b.Cancelable(3)); got != 1 {
		t.Fatalf("second batch = %d, want 1", got)
	}
}

func TestAckNackErrors(t *testing.T) {
	b, _ := testBroker(t, nil)
	e := mockEval("web", 50, "service")
	b.Enqueue(e)
	got, token := mustDequeue(t, b, "service")
	cases := []struct {
		name   string
		op     func(id, token string) error
		id     string
		token  string
		target error
	}{
		{"ack wrong token", b.Ack, got.ID, "nope", structs.ErrTokenMismatch},
		{"nack wrong token", b.Nack, got.ID, "nope", structs.ErrTokenMismatch},
		{"ack unknown eval", b.Ack, "missing", token, structs.ErrNotFound},
		{"nack unknown eval", b.Nack, "missing", token, structs.ErrNotFound},
		{"pause wrong token", b.PauseNackTimeout, got.ID, "nope", structs.ErrTokenMismatch},
		{"resume unknown", b.ResumeNackTimeout, "missing", token, structs.ErrNotFound},
		{"reset wrong token", b.OutstandingReset, got.ID, "nope", structs.ErrTokenMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(tc.id, tc.token); !errors.Is(err, tc.target) {
				t.Fatalf("err = %v, want %v", err, tc.target)
			}
		})
	}
	if tok, ok := b.Outstanding(got.ID); !ok || tok != token {
		t.Fatalf("Outstanding = %q, %v; want the delivery token", tok, ok)
	}
	mustAck(t, b, got, token)
	if err := b.Ack(got.ID, token); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("second ack: err = %v, want not found", err)
	}
	if _, ok := b.Outstanding(got.ID); ok {
		t.Fatal("Outstanding after ack")
	}
	b.SetEnabled(false)
	if err := b.Ack(got.ID, token); !errors.Is(err, structs.ErrBrokerDisabled) {
		t.Fatalf("ack while disabled: err = %v, want broker disabled", err)
	}
}

func TestTokensAreUniquePerDelivery(t *testing.T) {
	b, _ := testBroker(t, func(c *Config) { c.InitialNackDelay = 0; c.SubsequentNackDelay = 0 })
	b.Enqueue(mockEval("web", 50, "service"))
	e, first := mustDequeue(t, b, "service")
	mustNack(t, b, e, first)
	_, second := mustDequeue(t, b, "service")
	if first == second || first == "" {
		t.Fatalf("tokens %q and %q, want distinct non-empty", first, second)
	}
	if err := b.Ack(e.ID, first); !errors.Is(err, structs.ErrTokenMismatch) {
		t.Fatalf("ack with the stale token: err = %v, want token mismatch", err)
	}
}

func TestDuplicateEnqueueIgnored(t *testing.T) {
	b, _ := testBroker(t, nil)
	e := mockEval("web", 50, "service")
	b.Enqueue(e)
	b.Enqueue(e)
	got, tok := mustDequeue(t, b, "service")
	b.Enqueue(e) // outstanding: still a duplicate
	mustBeEmpty(t, b, "service")
	mustAck(t, b, got, tok)
	if s := b.Stats(); s.TotalReady != 0 || s.TotalPending != 0 {
		t.Fatalf("stats after ack = %+v, want empty", s)
	}
}

func TestRequeueWithToken(t *testing.T) {
	cases := []struct {
		name      string
		finish    func(b *Broker, e *structs.Evaluation, token string) error
		wantReady bool
	}{
		{"ack enqueues it again", func(b *Broker, e *structs.Evaluation, tok string) error { return b.Ack(e.ID, tok) }, true},
		{"nack drops the request", func(b *Broker, e *structs.Evaluation, tok string) error { return b.Nack(e.ID, tok) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := testBroker(t, nil) // nack delay 1s: not ready right after a nack
			e := mockEval("web", 50, "service")
			b.Enqueue(e)
			got, tok := mustDequeue(t, b, "service")
			b.EnqueueAll(map[*structs.Evaluation]string{got: tok})
			b.EnqueueAll(map[*structs.Evaluation]string{got: "stale-token"})
			mustBeEmpty(t, b, "service")
			if err := tc.finish(b, got, tok); err != nil {
				t.Fatal(err)
			}
			again, _ := tryDequeue(t, b, "service")
			if (again != nil) != tc.wantReady {
				t.Fatalf("ready again = %v, want %v", again != nil, tc.wantReady)
			}
		})
	}
}

func TestEnqueueWhileDisabledIsNoOp(t *testing.T) {
	b, _ := testBroker(t, nil)
	b.SetEnabled(false)
	b.Enqueue(mockEval("web", 50, "service"))
	b.SetEnabled(true)
	mustBeEmpty(t, b, "service")
}

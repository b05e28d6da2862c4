package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func reg(client int, key, val string, count int, call, ret int64, outcome string) Op {
	return Op{Client: client, Key: key, Kind: OpRegister, Val: val, Count: count, Call: call, Return: ret, Outcome: outcome}
}

func read(client int, key, val string, count int, call, ret int64) Op {
	op := Op{Client: client, Key: key, Kind: OpRead, Call: call, Return: ret, Outcome: OutcomeOK, Exists: val != "", ReadVal: val, ReadCount: count}
	if val == "" {
		op.Outcome, op.Status = OutcomeFail, 404
	}
	return op
}

// The model accepts what a linearizable job store may answer and refuses
// a stale read, a read of a value never written and a lost write, with
// unknown outcomes free to have been applied late or never.
func TestJobModel(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"sequential", []Op{
			read(0, "a", "", 0, 0, 1),
			reg(0, "a", "v1", 1, 2, 3, OutcomeOK),
			read(1, "a", "v1", 1, 4, 5),
			{Client: 1, Key: "a", Kind: OpScale, Expect: "v1", Count: 3, Call: 6, Return: 7, Outcome: OutcomeOK},
			read(0, "a", "v1", 3, 8, 9),
			{Client: 0, Key: "a", Kind: OpDeregister, Call: 10, Return: 11, Outcome: OutcomeOK},
			read(1, "a", "", 0, 12, 13),
		}, porcupine.Ok},
		{"stale read", []Op{
			reg(0, "a", "v1", 1, 0, 1, OutcomeOK),
			reg(0, "a", "v2", 1, 2, 3, OutcomeOK),
			read(1, "a", "v1", 1, 4, 5),
		}, porcupine.Illegal},
		{"unknown applied late", []Op{
			reg(0, "a", "v1", 1, 0, 1, OutcomeUnknown),
			read(1, "a", "", 0, 2, 3),
			read(1, "a", "v1", 1, 4, 5),
		}, porcupine.Ok},
		{"unknown never applied", []Op{
			reg(0, "a", "v1", 1, 0, 1, OutcomeUnknown),
			read(1, "a", "", 0, 2, 3),
		}, porcupine.Ok},
		{"scale refused while absent", []Op{
			{Client: 0, Key: "a", Kind: OpScale, Expect: "v1", Count: 2, Call: 0, Return: 1, Outcome: OutcomeFail, Status: 404},
			reg(0, "a", "v1", 1, 2, 3, OutcomeOK),
			{Client: 0, Key: "a", Kind: OpScale, Expect: "v1", Count: 2, Call: 4, Return: 5, Outcome: OutcomeFail, Status: 404},
		}, porcupine.Illegal},
		{"conditional scale on a replaced value", []Op{
			reg(0, "a", "v1", 1, 0, 1, OutcomeOK),
			reg(0, "a", "v2", 1, 2, 3, OutcomeOK),
			{Client: 1, Key: "a", Kind: OpScale, Expect: "v1", Count: 2, Call: 4, Return: 5, Outcome: OutcomeOK},
		}, porcupine.Illegal},
		{"keys are independent", []Op{
			reg(0, "a", "v1", 1, 0, 10, OutcomeOK),
			reg(1, "b", "w1", 2, 0, 10, OutcomeOK),
			read(2, "b", "w1", 2, 11, 12),
			read(2, "a", "v1", 1, 11, 12),
		}, porcupine.Ok},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vis := filepath.Join(t.TempDir(), "vis.html")
			got, err := CheckLinearizable(tc.ops, 10*time.Second, vis)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("porcupine says %s, want %s", got, tc.want)
			}
			if _, err := os.Stat(vis); (err == nil) != (got != porcupine.Ok) {
				t.Fatalf("visualisation written: %v, want it only for a failing history", err == nil)
			}
		})
	}
}

func TestCheckNoLostWrites(t *testing.T) {
	ops := []Op{
		reg(0, "a", "v1", 1, 0, 1, OutcomeOK),
		reg(0, "a", "v2", 1, 2, 3, OutcomeOK),
		reg(1, "a", "v3", 1, 2, 9, OutcomeUnknown),
		reg(0, "b", "w1", 1, 0, 1, OutcomeOK),
		{Client: 0, Key: "c", Kind: OpDeregister, Call: 0, Return: 1, Outcome: OutcomeOK},
	}
	final := map[string]jobState{
		"a": {Exists: true, Val: "v3", Count: 1}, // superseded by the unknown v3
		"b": {},                                  // w1 lost
		"c": {},
	}
	lost := CheckNoLostWrites(ops, final)
	if len(lost) != 1 || lost[0].Key != "b" {
		t.Fatalf("lost = %+v, want only b", lost)
	}
	final["a"] = jobState{Exists: true, Val: "v1", Count: 1}
	if lost := CheckNoLostWrites(ops, final); len(lost) != 2 {
		t.Fatalf("lost = %+v, want a and b", lost)
	}
}

package chaos

import (
	"encoding/json"
	"strings"
	"testing"
)

// The table sums runs per scenario and leaves the faulted server out of
// the slowest first acknowledged write.
func TestTable(t *testing.T) {
	var in strings.Builder
	for _, r := range []Result{
		{Scenario: "leader-kill", Seed: 1, Pass: true, Ops: 100, Unknown: 2, Linearizable: "Ok", ElectedAfter: 2.1,
			Faulted: []string{"s1"}, ServerAckAfter: map[string]float64{"s1": 8.3, "s2": 2.2, "s3": 2.1}, ConvergedAfter: 0.3},
		{Scenario: "leader-kill", Seed: 2, Pass: false, Ops: 50, Linearizable: "Illegal", ElectedAfter: 1.5,
			Faulted: []string{"s2"}, ServerAckAfter: map[string]float64{"s1": 1.6, "s2": 9.0}, ConvergedAfter: 0.1,
			Overlap: map[string]Overlap{"sentinel-default": {Seconds: 0.2}}},
		{Scenario: "leader-transfer", Skipped: "not supported"},
	} {
		b, _ := json.Marshal(r)
		in.Write(append(b, '\n'))
	}
	var out strings.Builder
	if err := Table(strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	want := "| leader-kill | 2 | 1 | 150 (2) | Illegal 1, Ok 1 | 0 | 0.0-0.2 | 0.0 | 1.5-2.1 | 1.6-2.2 | 0.1-0.3 |"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "leader-transfer") {
		t.Fatalf("table:\n%s\nwant the row\n%s", out.String(), want)
	}
}

package chaos

import (
	"os/exec"
	"testing"
	"time"
)

// A task's shell forking children (which hold its argv until they exec)
// counts as one copy; two shells count as two.
func TestCountProcs(t *testing.T) {
	marker := "chaos-test-marker-" + time.Now().Format("150405.000000")
	start := func() *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", "while :; do sleep 0.01; done", marker)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	start()
	for i := 0; i < 100; i++ {
		if n := CountProcs([]string{marker})[marker]; n != 1 {
			t.Fatalf("sample %d: %d copies, want 1", i, n)
		}
		time.Sleep(3 * time.Millisecond)
	}
	start()
	if n := CountProcs([]string{marker})[marker]; n != 2 {
		t.Fatalf("%d copies, want 2", n)
	}
	samples := []Sample{{T: 0, Counts: map[string]int{marker: 1}}, {T: int64(100 * time.Millisecond), Counts: map[string]int{marker: 2}},
		{T: int64(200 * time.Millisecond), Counts: map[string]int{marker: 2}}, {T: int64(1100 * time.Millisecond), Counts: map[string]int{marker: 1}}}
	o := Overlaps(samples, marker, 1)
	if o.Max != 2 || o.Seconds < 0.19 || o.Seconds > 0.21 || len(o.PerSecond) != 2 || o.PerSecond[0] != 2 || o.PerSecond[1] != 1 {
		t.Fatalf("overlap = %+v", o)
	}
}

package structs

import (
	"testing"
	"time"
)

func TestDrainStrategyForced(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		ds   *DrainStrategy
		now  time.Time
		want bool
	}{
		{"no drain", nil, t0, false},
		{"no deadline", &DrainStrategy{StartedAt: t0}, t0.Add(time.Hour), false},
		{"before the deadline", &DrainStrategy{Deadline: time.Minute, StartedAt: t0}, t0.Add(59 * time.Second), false},
		{"at the deadline", &DrainStrategy{Deadline: time.Minute, StartedAt: t0}, t0.Add(time.Minute), true},
		{"force time set", &DrainStrategy{Deadline: time.Hour, StartedAt: t0, ForceDeadline: t0.Add(time.Second)}, t0.Add(time.Second), true},
		{"forced at once", &DrainStrategy{Deadline: -1, StartedAt: t0}, t0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ds.Forced(tc.now); got != tc.want {
				t.Fatalf("Forced = %v, want %v", got, tc.want)
			}
		})
	}
}

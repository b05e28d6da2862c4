package allocrunner

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

func TestRestartTracker(t *testing.T) {
	fail := &driver.ExitResult{ExitCode: 1}
	ok := &driver.ExitResult{}
	type step struct {
		at      time.Duration // since start
		res     *driver.ExitResult
		err     error
		restart bool
		failed  bool
		delay   time.Duration
	}
	tests := []struct {
		name    string
		jobType string
		policy  structs.RestartPolicy
		steps   []step
	}{
		{"batch success never restarts", structs.JobTypeBatch,
			structs.RestartPolicy{Attempts: 3, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			[]step{{res: ok}}},
		{"service success restarts", structs.JobTypeService,
			structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			[]step{{res: ok, restart: true, delay: time.Second}, {res: ok, failed: true}}},
		{"attempts then fail", structs.JobTypeBatch,
			structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			[]step{{res: fail, restart: true, delay: time.Second}, {res: fail, restart: true, delay: time.Second}, {res: fail, failed: true}}},
		{"new interval resets count", structs.JobTypeService,
			structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			[]step{{res: fail, restart: true, delay: time.Second}, {at: 2 * time.Minute, res: fail, restart: true, delay: time.Second}}},
		{"delay mode waits out the interval", structs.JobTypeService,
			structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: "delay"},
			[]step{{res: fail, restart: true, delay: time.Second}, {at: 10 * time.Second, res: fail, restart: true, delay: 50 * time.Second}}},
		{"unrecoverable start error", structs.JobTypeService,
			structs.RestartPolicy{Attempts: 5, Interval: time.Minute, Delay: time.Second, Mode: "delay"},
			[]step{{err: driver.Unrecoverable(errors.New("bad")), failed: true}}},
		{"recoverable start error restarts", structs.JobTypeBatch,
			structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			[]step{{err: errors.New("exec failed"), restart: true, delay: time.Second}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Unix(1000, 0)
			var now time.Time
			r := newRestartTracker(&tc.policy, tc.jobType)
			r.now = func() time.Time { return now }
			r.jitterF = func() float64 { return 0 }
			for i, s := range tc.steps {
				now = base.Add(s.at)
				d := r.afterExit(s.res, s.err)
				if d.restart != s.restart || d.failed != s.failed || (s.restart && d.delay != s.delay) {
					t.Fatalf("step %d: got %+v want restart=%v failed=%v delay=%v", i, d, s.restart, s.failed, s.delay)
				}
			}
		})
	}
}

// TestRestartTrackerSetPolicy: an in-place update's policy applies to the
// next exit and keeps the restarts already counted in the interval.
func TestRestartTrackerSetPolicy(t *testing.T) {
	fail := &driver.ExitResult{ExitCode: 1}
	now := time.Unix(1000, 0)
	r := newRestartTracker(&structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: "fail"}, structs.JobTypeService)
	r.now = func() time.Time { return now }
	r.jitterF = func() float64 { return 0 }
	if d := r.afterExit(fail, nil); !d.restart {
		t.Fatalf("first failure: %+v", d)
	}
	r.setPolicy(&structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 3 * time.Second, Mode: "fail"})
	if d := r.afterExit(fail, nil); !d.restart || d.delay != 3*time.Second {
		t.Fatalf("second failure under the new policy: %+v", d)
	}
	r.setPolicy(nil)
	if d := r.afterExit(fail, nil); !d.failed {
		t.Fatalf("third failure (two attempts used): %+v", d)
	}
}

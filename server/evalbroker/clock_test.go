package evalbroker

import (
	"time"

	"github.com/drover-project/drover/internal/clock"
)

// fakeClock is the manual test clock: timers fire only inside Advance.
type fakeClock = clock.Manual

func newFakeClock() *fakeClock {
	return clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
}

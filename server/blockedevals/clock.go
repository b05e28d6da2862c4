package blockedevals

import "github.com/drover-project/drover/internal/clock"

// Timer, Clock and SystemClock are the shared clock types (internal/clock):
// the package's only source of time. AfterFunc must never run f inline,
// because the package schedules timers while holding its lock.
type (
	Timer       = clock.Timer
	Clock       = clock.Clock
	SystemClock = clock.Real
)

package blockedevals

import (
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-metrics"
)

// Enqueuer receives released evaluations, each with the delivery token it
// was reblocked under ("" if none). *evalbroker.Broker implements it. It is
// called without the tracker's lock held and must not block for long.
type Enqueuer interface {
	EnqueueAll(evals map[*structs.Evaluation]string)
}

// Defaults.
const (
	// DefaultCoalesceWindow is how long capacity changes are gathered
	// before they are applied together.
	DefaultCoalesceWindow = 10 * time.Millisecond
	// DefaultUnblockIndexTTL is how long the index of a capacity change is
	// remembered for missed-unblock detection (Nomad keeps them ~10 min).
	DefaultUnblockIndexTTL = 15 * time.Minute
)

// Config configures a tracker. Start from DefaultConfig and set Enqueuer.
type Config struct {
	// Enqueuer receives released evaluations. Required.
	Enqueuer Enqueuer
	// CoalesceWindow delays the application of Unblock / UnblockNode so a
	// burst becomes one release. Zero applies them on the next timer tick.
	CoalesceWindow time.Duration
	// UnblockIndexTTL bounds the memory of capacity-change indexes. An
	// evaluation whose scheduling takes longer than this may miss an
	// unblock. Must be positive.
	UnblockIndexTTL time.Duration
	// Clock defaults to SystemClock.
	Clock Clock
	// Logger defaults to a null logger; the tracker names it "blocked_evals".
	Logger hclog.Logger
	// Metrics receives EmitStats gauges; nil means the go-metrics global.
	Metrics *metrics.Metrics
}

// DefaultConfig returns the defaults with the system clock and no Enqueuer.
func DefaultConfig() Config {
	return Config{CoalesceWindow: DefaultCoalesceWindow, UnblockIndexTTL: DefaultUnblockIndexTTL}
}

// validate checks the config and fills in defaults for nil fields.
func (c *Config) validate() error {
	switch {
	case c.Enqueuer == nil:
		return structs.NewError(structs.ErrCodeInvalid, "blocked evals: Enqueuer is required")
	case c.CoalesceWindow < 0:
		return structs.NewError(structs.ErrCodeInvalid, "blocked evals: CoalesceWindow must not be negative")
	case c.UnblockIndexTTL <= 0:
		return structs.NewError(structs.ErrCodeInvalid, "blocked evals: UnblockIndexTTL must be positive")
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}

package evalbroker

import (
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-metrics"
)

// Defaults, as in Nomad.
const (
	DefaultNackTimeout         = 60 * time.Second
	DefaultInitialNackDelay    = 1 * time.Second
	DefaultSubsequentNackDelay = 20 * time.Second
	DefaultDeliveryLimit       = 3
)

// FailedQueue is the pseudo scheduler type holding evaluations that reached
// the delivery limit. The leader dequeues from it.
const FailedQueue = "_failed"

// Config configures a Broker. Start from DefaultConfig.
type Config struct {
	// NackTimeout is how long a delivery may stay unacked before the broker
	// nacks it. Must be positive.
	NackTimeout time.Duration
	// InitialNackDelay delays redelivery after the first nack;
	// SubsequentNackDelay after every later one. Zero redelivers at once.
	InitialNackDelay    time.Duration
	SubsequentNackDelay time.Duration
	// DeliveryLimit is how many deliveries an evaluation gets before a nack
	// sends it to FailedQueue. Must be at least 1.
	DeliveryLimit int
	// CoverDelay is how far in the future an evaluation held until due
	// (WaitUntil, or a nack delay) may be due and still count as waiting
	// for delivery for Cover. Zero counts only evaluations due now.
	CoverDelay time.Duration
	// Clock defaults to SystemClock.
	Clock Clock
	// Logger defaults to a null logger; the broker names it "eval_broker".
	Logger hclog.Logger
	// Metrics receives EmitStats gauges; nil means the go-metrics global.
	Metrics *metrics.Metrics
}

// DefaultConfig returns Nomad's defaults with the system clock.
func DefaultConfig() Config {
	return Config{
		NackTimeout:         DefaultNackTimeout,
		InitialNackDelay:    DefaultInitialNackDelay,
		SubsequentNackDelay: DefaultSubsequentNackDelay,
		DeliveryLimit:       DefaultDeliveryLimit,
	}
}

// validate checks the config and fills in defaults for nil fields.
func (c *Config) validate() error {
	switch {
	case c.NackTimeout <= 0:
		return structs.NewError(structs.ErrCodeInvalid, "eval broker: NackTimeout must be positive, got %v", c.NackTimeout)
	case c.InitialNackDelay < 0 || c.SubsequentNackDelay < 0:
		return structs.NewError(structs.ErrCodeInvalid, "eval broker: nack delays must not be negative")
	case c.DeliveryLimit < 1:
		return structs.NewError(structs.ErrCodeInvalid, "eval broker: DeliveryLimit must be at least 1, got %d", c.DeliveryLimit)
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}

package chaos

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Operation kinds of the workload.
const (
	OpRegister   = "register"   // write the whole job: its marker value and count
	OpScale      = "scale"      // set the group's count, conditional on the job's modify index
	OpDeregister = "deregister" // purge the job
	OpRead       = "read"       // read the job
)

// Outcomes: an operation either completed (ok), certainly did not take
// effect (fail: a 4xx answer), or may or may not have (unknown: a time
// out, a connection error after sending, a 5xx answer).
const (
	OutcomeOK      = "ok"
	OutcomeFail    = "fail"
	OutcomeUnknown = "unknown"
)

// Op is one recorded operation. Times are nanoseconds since the run
// began (the monotonic clock).
type Op struct {
	Client int    `json:"client"`
	Server string `json:"server"`
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	// Input: the value a register writes, the count it or a scale sets,
	// and for a scale the value the job held when it was read (its
	// modify index is the condition sent).
	Val    string `json:"val,omitempty"`
	Count  int    `json:"count"`
	Expect string `json:"expect,omitempty"`

	Call    int64  `json:"call"`
	Return  int64  `json:"return"`
	Outcome string `json:"outcome"`
	Status  int    `json:"status,omitempty"` // the HTTP status of a refusal
	Err     string `json:"err,omitempty"`

	// A read's answer: Exists false for a 404.
	Exists    bool   `json:"exists"`
	ReadVal   string `json:"read_val,omitempty"`
	ReadCount int    `json:"read_count"`
}

// NotFound says the operation was answered 404 (no such job).
func (o Op) NotFound() bool { return o.Outcome == OutcomeFail && o.Status == 404 }

// Conflict says a conditional scale was refused (409).
func (o Op) Conflict() bool { return o.Outcome == OutcomeFail && o.Status == 409 }

// History is every operation of a run; safe for concurrent use.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op // guarded by mu
}

// NewHistory starts the run's clock.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the run began.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records a completed operation.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops is a copy of the operations recorded so far.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// WriteJSON saves the history.
func (h *History) WriteJSON(path string) error {
	b, err := json.MarshalIndent(h.Ops(), "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// classify sets op's outcome from err: nil is ok; an HTTP answer of 4xx
// is a refusal that wrote nothing, as is a connection never made; anything else (5xx, including
// Drover's 504 outcome_unknown, time outs, connection errors) is unknown.
func classify(op *Op, err error) {
	if err == nil {
		op.Outcome = OutcomeOK
		return
	}
	op.Err = err.Error()
	var dial *net.OpError
	if errors.As(err, &dial) && dial.Op == "dial" {
		op.Outcome = OutcomeFail // never sent
		return
	}
	var ue api.UnexpectedResponseError
	var pue *api.UnexpectedResponseError
	status := 0
	switch {
	case errors.As(err, &ue):
		status = ue.StatusCode()
	case errors.As(err, &pue):
		status = pue.StatusCode()
	}
	if status >= 400 && status < 500 && status != 408 && status != 429 {
		op.Outcome, op.Status = OutcomeFail, status
		return
	}
	op.Outcome, op.Status = OutcomeUnknown, status
}

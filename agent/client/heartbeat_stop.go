package client

import (
	"sync"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// heartbeatStop stops, on this client, the allocations of groups with a
// client-side stop (stop_after_client_disconnect, or disconnect {
// stop_on_client_after }) once the client has gone that long without a
// successful heartbeat: a client cut off from the servers does not keep
// running what the servers will have replaced elsewhere.
//
// The timeout counts from when the last successful heartbeat (or
// registration) was sent, not answered: the server reset the node's TTL
// after that, so the client's deadline is never later than the one the
// servers' fence (scheduler/fence.go) assumes. One timer, armed for the
// earliest deadline, serves every such allocation; a client without any
// arms none.
type heartbeatStop struct {
	clock clock.Clock
	// kill stops an allocation's tasks (it must not block).
	kill func(allocID, reason string)

	mu      sync.Mutex
	lastOK  time.Time                // guarded by mu; zero until the first success
	timeout map[string]time.Duration // allocations watched; guarded by mu
	timer   clock.Timer              // guarded by mu
	stopped bool                     // guarded by mu
}

func newHeartbeatStop(clk clock.Clock, kill func(allocID, reason string)) *heartbeatStop {
	return &heartbeatStop{clock: clk, kill: kill, timeout: map[string]time.Duration{}}
}

// ok records a successful heartbeat (or registration) sent at sent.
func (h *heartbeatStop) ok(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sent.After(h.lastOK) {
		h.lastOK = sent
	}
	h.armLocked()
}

// watch starts watching an allocation, if its group asks for a
// client-side stop.
func (h *heartbeatStop) watch(a *structs.Allocation) {
	if a.Job == nil {
		return
	}
	d, ok := a.Job.LookupTaskGroup(a.TaskGroup).StopAfterClientDisconnectTimeout()
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timeout[a.ID] = d
	h.armLocked()
}

// forget stops watching an allocation.
func (h *heartbeatStop) forget(allocID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.timeout[allocID]; ok {
		delete(h.timeout, allocID)
		h.armLocked()
	}
}

// stop disarms the timer for good.
func (h *heartbeatStop) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// armLocked sets the timer for the earliest deadline.
func (h *heartbeatStop) armLocked() {
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	if h.stopped || h.lastOK.IsZero() || len(h.timeout) == 0 {
		return
	}
	first := time.Duration(-1)
	for _, d := range h.timeout {
		if first < 0 || d < first {
			first = d
		}
	}
	h.timer = h.clock.AfterFunc(h.lastOK.Add(first).Sub(h.clock.Now()), h.fire)
}

// fire stops every allocation whose deadline has passed.
func (h *heartbeatStop) fire() {
	h.mu.Lock()
	now := h.clock.Now()
	since := now.Sub(h.lastOK)
	var due []string
	for id, d := range h.timeout {
		if since >= d {
			due = append(due, id)
			delete(h.timeout, id)
		}
	}
	h.armLocked()
	h.mu.Unlock()
	for _, id := range due {
		h.kill(id, "no successful heartbeat for "+since.Round(time.Millisecond).String()+
			": stopping as the group's stop_after_client_disconnect asks")
	}
}

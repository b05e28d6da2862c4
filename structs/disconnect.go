package structs

import "time"

// Disconnected clients: what happens to the allocations of a client that
// stops heartbeating. Nomad's group fields, in both its styles:
//
//   - stop_after_client_disconnect, or disconnect { stop_on_client_after }
//     (Nomad 1.8): the client itself stops the group's allocations once it
//     has gone that long without a successful heartbeat. The servers mark
//     them lost when the node goes down, as without the setting, but
//     place the replacement only once the client's own stop has certainly
//     happened (StopAfterFence): so a group never runs more copies than
//     its count, whatever the partition.
//   - max_client_disconnect, or disconnect { lost_after }: the servers
//     keep such allocations as unknown instead of lost for that long,
//     replace them meanwhile unless replace = false, and when the client
//     comes back keep one of the two by the reconcile policy
//     (scheduler/disconnect.go). Service and batch jobs only in Drover.
//
// A group uses one style or the other, never both (Nomad refuses mixing
// them too).

// Reconcile options of a disconnect block: which of an original
// allocation and its replacement is kept when a disconnected client comes
// back. Nomad's values.
const (
	ReconcileOptionKeepOriginal    = "keep_original"
	ReconcileOptionKeepReplacement = "keep_replacement"
	ReconcileOptionBestScore       = "best_score"
	ReconcileOptionLongestRunning  = "longest_running"
)

// DisconnectStrategy is a group's disconnect block (Nomad 1.8).
type DisconnectStrategy struct {
	// LostAfter: how long the servers keep the allocations of a node that
	// missed its heartbeats as unknown before they are lost (0: at once).
	LostAfter time.Duration
	// StopOnClientAfter: how long a client that cannot heartbeat keeps the
	// group's allocations running (nil: until told by a server).
	StopOnClientAfter *time.Duration
	// Replace: whether a disconnected allocation is replaced (default
	// true).
	Replace *bool
	// Reconcile: which copy is kept when the client comes back (default
	// best_score).
	Reconcile string
}

// Copy returns a deep copy.
func (d *DisconnectStrategy) Copy() *DisconnectStrategy {
	if d == nil {
		return nil
	}
	c := *d
	if d.StopOnClientAfter != nil {
		v := *d.StopOnClientAfter
		c.StopOnClientAfter = &v
	}
	if d.Replace != nil {
		v := *d.Replace
		c.Replace = &v
	}
	return &c
}

// canonicalize fills Nomad's server defaults: replace true, reconcile
// best_score.
func (d *DisconnectStrategy) canonicalize() {
	if d.Replace == nil {
		t := true
		d.Replace = &t
	}
	if d.Reconcile == "" {
		d.Reconcile = ReconcileOptionBestScore
	}
}

// StopAfterClientDisconnectTimeout returns how long a client that cannot
// heartbeat keeps the group's allocations before stopping them, from
// either style; ok is false when the group does not ask for it (or asks
// for 0, which Nomad treats as unset).
func (tg *TaskGroup) StopAfterClientDisconnectTimeout() (d time.Duration, ok bool) {
	switch {
	case tg == nil:
		return 0, false
	case tg.StopAfterClientDisconnect != nil:
		d = *tg.StopAfterClientDisconnect
	case tg.Disconnect != nil && tg.Disconnect.StopOnClientAfter != nil:
		d = *tg.Disconnect.StopOnClientAfter
	}
	return d, d > 0
}

// DisconnectWindow returns how long the servers keep the allocations of a
// node that missed its heartbeats as unknown (max_client_disconnect, or
// disconnect.lost_after), whether they are replaced meanwhile, and the
// reconcile policy; ok is false when the group has no window (its
// allocations are lost at once).
func (tg *TaskGroup) DisconnectWindow() (window time.Duration, replace bool, reconcile string, ok bool) {
	switch {
	case tg == nil:
		return 0, false, "", false
	case tg.MaxClientDisconnect != nil:
		window, replace, reconcile = *tg.MaxClientDisconnect, true, ReconcileOptionBestScore
	case tg.Disconnect != nil:
		window, replace, reconcile = tg.Disconnect.LostAfter, true, tg.Disconnect.Reconcile
		if tg.Disconnect.Replace != nil {
			replace = *tg.Disconnect.Replace
		}
		if reconcile == "" {
			reconcile = ReconcileOptionBestScore
		}
	}
	return window, replace, reconcile, window > 0
}

// HasDisconnectWindow reports whether the group keeps the allocations of
// a disconnected node as unknown for a while (cheap: no defaults filled).
func (tg *TaskGroup) HasDisconnectWindow() bool {
	return tg != nil && ((tg.MaxClientDisconnect != nil && *tg.MaxClientDisconnect > 0) ||
		(tg.Disconnect != nil && tg.Disconnect.LostAfter > 0))
}

// StopAfterFence is how long after its node was marked down a lost
// allocation of a group with a client-side stop may be replaced: the stop
// timeout, plus the longest kill timeout of its tasks (the client's stop
// may take that long to end the processes; canonicalization gives each
// task Nomad's 5s default), plus a margin for the clocks
// of client and server running at different rates (1% of the timeout) and
// a second for the client's stop to start. The client measures its
// timeout from the sending of its last successful heartbeat, before the
// server reset the node's TTL, and the server marks the node down a TTL
// after that reset at the earliest: so the client's processes have ended
// before the fence passes. ok is false for a group without a client-side
// stop.
func (tg *TaskGroup) StopAfterFence() (d time.Duration, ok bool) {
	stop, ok := tg.StopAfterClientDisconnectTimeout()
	if !ok {
		return 0, false
	}
	var kill time.Duration
	for _, t := range tg.Tasks {
		if t != nil && t.KillTimeout > kill {
			kill = t.KillTimeout
		}
	}
	return stop + kill + stop/100 + time.Second, true
}

// validateDisconnect checks the disconnect settings of group tg (at path
// p) of a job of type jobType, with Nomad's rules, and refuses by name
// what Drover does not do yet.
func (tg *TaskGroup) validateDisconnect(v *validator, p, jobType string) {
	stopOK := jobType == JobTypeService || jobType == JobTypeBatch
	if d := tg.MaxClientDisconnect; d != nil {
		if *d < 0 {
			v.add(join(p, "MaxClientDisconnect"), "max_client_disconnect cannot be negative")
		}
		if !stopOK {
			v.add(join(p, "MaxClientDisconnect"), "Drover does not support max_client_disconnect in %s jobs (service and batch jobs only)", jobType)
		}
		if tg.StopAfterClientDisconnect != nil {
			v.add(join(p, "MaxClientDisconnect"), "a group cannot have both max_client_disconnect and stop_after_client_disconnect")
		}
	}
	if d := tg.StopAfterClientDisconnect; d != nil {
		if *d <= 0 {
			v.add(join(p, "StopAfterClientDisconnect"), "stop_after_client_disconnect must be a positive duration")
		}
		if !stopOK {
			v.add(join(p, "StopAfterClientDisconnect"), "stop_after_client_disconnect can only be set in batch and service jobs, not %s", jobType)
		}
	}
	ds := tg.Disconnect
	if ds == nil {
		return
	}
	dp := join(p, "Disconnect")
	if tg.MaxClientDisconnect != nil {
		v.add(dp, "a group cannot have both a disconnect block and max_client_disconnect (use disconnect's lost_after)")
	}
	if tg.StopAfterClientDisconnect != nil {
		v.add(dp, "a group cannot have both a disconnect block and stop_after_client_disconnect (use disconnect's stop_on_client_after)")
	}
	if ds.LostAfter < 0 {
		v.add(join(dp, "LostAfter"), "lost_after cannot be a negative duration")
	}
	if s := ds.StopOnClientAfter; s != nil {
		if *s < 0 {
			v.add(join(dp, "StopOnClientAfter"), "stop_on_client_after cannot be a negative duration")
		}
		if !stopOK {
			v.add(join(dp, "StopOnClientAfter"), "stop_on_client_after can only be used with service or batch jobs, not %s", jobType)
		}
		if ds.LostAfter != 0 {
			v.add(dp, "a disconnect block cannot have both lost_after and stop_on_client_after")
		}
	}
	switch ds.Reconcile {
	case "", ReconcileOptionBestScore, ReconcileOptionLongestRunning, ReconcileOptionKeepOriginal, ReconcileOptionKeepReplacement:
	default:
		v.add(join(dp, "Reconcile"), "reconcile must be %s, %s, %s or %s; got %q", ReconcileOptionBestScore,
			ReconcileOptionKeepOriginal, ReconcileOptionKeepReplacement, ReconcileOptionLongestRunning, ds.Reconcile)
	}
	if ds.LostAfter > 0 && !stopOK {
		v.add(join(dp, "LostAfter"), "Drover does not support lost_after in %s jobs (service and batch jobs only)", jobType)
	}
}

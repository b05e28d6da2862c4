// Package quarantine is the leader's flaky-node quarantine, after Twitter
// Scoot's handling of flaky nodes: failures that are a node's fault, not
// its jobs', are counted per node in a sliding window; a node with
// Threshold of them within Window is made ineligible (quarantined) and,
// after Cooldown, re-probed; a node that passes the probe is eligible
// again, one that fails it stays quarantined for another Cooldown.
//
//	client task runner ──(typed NodeFault kinds)──┐
//	node endpoints (driver unhealthy, flaps) ─────┤ Report
//	                                              v
//	            Watcher.Run: one pass per wake-up (Plan, then Writer)
//	              faults in window >= Threshold ──> quarantine: ineligible,
//	                                                node event, ProbeAt
//	              ProbeAt passed ──> Probe(node) ──> pass: eligible again
//	                                            └──> fail: next Cooldown
//
// What counts is decided where a failure happens, as a structs.NodeFault
// kind (structs/quarantine.go): a driver that failed to start a task for
// the node's reasons, a driver turning unhealthy, the allocation or task
// directory, logs or cgroup failing to set up, a node back after it was
// marked down for missed heartbeats. A task's own exit is never a node
// fault. Nothing here looks at an error's text.
//
// The counts and the quarantine live in Raft (state's node_quarantine
// table, one row per node with recent faults), so a new leader carries on
// where the old one stopped: it re-reads the rows, probes at the recorded
// ProbeAt, and counts new faults on top of the recorded ones. Faults
// reported to a leader that lost leadership before writing them are lost;
// they are a signal, not a record.
//
// Plan is the whole decision, a pure function of a state snapshot, the
// reported faults and the time, tested without Raft or a clock. Watcher.Run
// is the loop around it: it waits on the watch channels of what Plan read,
// on new reports and on the next deadline of the injected clock.
//
// This package must never write state except through Writer, never run on
// a follower (the server starts it as a leader hook), and never override
// an operator: an operator's eligibility or drain change of a node deletes
// its row (state/node_quarantine.go), and a node that is already
// ineligible or draining is never quarantined.
package quarantine

//go:build race

package state

// verifyLookups makes writeTxn check every lookup it answers from its own
// rows against the memdb transaction. It is on in race-detector builds,
// which is how the test suites run.
const verifyLookups = true

//go:build !race

package state

// verifyLookups is off in normal builds; see verify_race.go.
const verifyLookups = false

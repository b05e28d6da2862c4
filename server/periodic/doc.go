// Package periodic is the leader's dispatcher of periodic jobs: at each
// time a periodic job's cron specs name, it asks its Launcher to register
// the child job `<id>/periodic-<unix seconds>`.
//
// The dispatcher decides from the state store alone and keeps no state of
// its own that matters across leaders: the last launch of every periodic
// job is in the replicated periodic_launch table, written in the Raft
// entry that registers the child, so a new leader knows which runs were
// made. On start it launches, per job, the most recent run that fell due
// while no leader launched it (Nomad launches at most one missed run), and
// the store refuses a launch not later than the recorded one, so a run is
// never launched twice. prohibit_overlap skips a run while a previous
// child is not dead.
//
// It imports structs, the state store's read interface (Reader), the
// clock and cronexpr; it never writes to the store itself.
package periodic

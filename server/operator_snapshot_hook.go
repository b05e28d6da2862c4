package server

// afterSnapshotRestore restarts leader-only components so they rebuild
// from the restored state (pending evaluations, blocked evaluations,
// heartbeat timers).
func (s *Server) afterSnapshotRestore() {}

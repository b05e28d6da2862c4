package server

import "time"

// afterSnapshotRestore has the leader loop restart leader-only components
// so they rebuild from the restored state (pending evaluations, blocked
// evaluations, heartbeat timers), and waits until they have. It gives up
// when leadership is lost meanwhile (a new leader builds from the restored
// state anyway) or after a minute.
func (s *Server) afterSnapshotRestore() {
	done := make(chan struct{})
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	select {
	case s.restoredCh <- done:
	case <-timeout.C:
		s.logger.Warn("leader loop did not take the snapshot restore notice")
		return
	case <-s.shutdownCh:
		return
	}
	select {
	case <-done:
	case <-timeout.C:
		s.logger.Warn("leader components did not restart within a minute of the snapshot restore")
	case <-s.shutdownCh:
	}
}

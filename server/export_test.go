package server

// LeaderEstablishedForTest reports whether s leads and has finished establishing
// its leadership (every leader hook ran: heartbeat timers armed, broker
// enabled). Requests are served earlier, once the barrier applied; tests
// that assert on what the hooks set up wait for this.
func (s *Server) LeaderEstablishedForTest() bool { return s.IsLeader() && s.leaderEstablished.Load() }

package server

import (
	"errors"

	"github.com/drover-project/drover/structs"
)

// Server is one Drover server. Create it with NewServer; stop it with
// Shutdown.
type Server struct {
	config *Config
}

// NewServer starts a server: it opens the listener, starts Raft and the
// join loop, and returns once the server accepts connections. It does not
// wait for a leader.
func NewServer(cfg *Config) (*Server, error) {
	return nil, errors.New("not implemented yet")
}

// RPC makes an in-process call with exactly the routing of a remote one:
// writes and consistent reads are forwarded to the leader, reads block on
// MinQueryIndex, and errors are typed as they would be over the wire.
func (s *Server) RPC(method string, args, reply any) error {
	return structs.ErrNoLeader
}

// Shutdown stops the server. It is idempotent.
func (s *Server) Shutdown() error { return nil }

// IsLeader reports whether this server is the Raft leader.
func (s *Server) IsLeader() bool { return false }

// Leader returns the leader's RPC address, or "" when none is known.
func (s *Server) Leader() string { return "" }

// RPCAddr returns the address other servers and clients use for this one.
func (s *Server) RPCAddr() string { return "" }

// Members returns the servers this one knows, itself included, sorted by ID.
func (s *Server) Members() []*structs.ServerMember { return nil }

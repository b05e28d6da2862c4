package server

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/structs"
)

// Status answers questions about the cluster itself. None of its methods
// is forwarded: each server answers from what it knows.
type Status struct {
	srv *Server
}

// Leader returns the leader's RPC address, or "" when none is known.
func (st *Status) Leader(args *structs.GenericRequest, reply *string) error {
	*reply = st.srv.Leader()
	return nil
}

// Peers returns the addresses of the voters in this server's copy of the
// Raft configuration.
func (st *Status) Peers(args *structs.GenericRequest, reply *[]string) error {
	f := st.srv.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftError(err)
	}
	var out []string
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			out = append(out, string(srv.Address))
		}
	}
	*reply = out
	return nil
}

// Members returns the servers this one knows, itself included.
func (st *Status) Members(args *structs.GenericRequest, reply *structs.ServerMembersResponse) error {
	reply.Members = st.srv.Members()
	return nil
}

// Announce records the calling server and answers with every server this
// one knows, so a server that knows one peer learns the whole cluster.
func (st *Status) Announce(args *structs.ServerAnnounceRequest, reply *structs.ServerMembersResponse) error {
	s := st.srv
	if args.Member.ID != "" && args.Member.ID != s.nodeID {
		known := s.members.known(args.Member.ID)
		s.members.observe(args.Member, true, time.Now())
		if !known && s.IsLeader() {
			s.triggerReconcile()
		}
	}
	reply.Members = s.Members()
	return nil
}

package server

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/version"
)

// Member statuses reported in structs.ServerMember.Status.
const (
	MemberStatusAlive   = "alive"
	MemberStatusFailed  = "failed"
	MemberStatusUnknown = "unknown" // heard of only through another server
)

// memberAliveRounds: a member contacted directly within this many announce
// intervals counts as alive (and may be added to Raft by the leader).
const memberAliveRounds = 3

// memberTable is what this server knows about the other servers, learned by
// announcing to them and from their replies (each reply lists every member
// the peer knows, so knowing one peer is enough to learn the cluster).
type memberTable struct {
	mu      sync.Mutex
	members map[string]*memberEntry // by server ID; guarded by mu
}

type memberEntry struct {
	member structs.ServerMember
	// lastSeen is the last direct contact (an announce from it, or its
	// answer to ours); zero when only heard of through others.
	lastSeen time.Time
}

func newMemberTable() *memberTable {
	return &memberTable{members: make(map[string]*memberEntry)}
}

// observe records m. direct means m itself talked to us just now.
func (t *memberTable) observe(m structs.ServerMember, direct bool, now time.Time) {
	if m.ID == "" || m.RPCAddr == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.members[m.ID]
	if !ok {
		e = &memberEntry{}
		t.members[m.ID] = e
	}
	if direct {
		// A server that answers at an address replaces any other ID
		// recorded there (a wiped server comes back with a new ID).
		for id, other := range t.members {
			if id != m.ID && other.member.RPCAddr == m.RPCAddr {
				delete(t.members, id)
			}
		}
		e.member = m
		e.lastSeen = now
		return
	}
	if !ok {
		e.member = m
		return
	}
	// Gossip never overrides direct knowledge, except that state, once
	// reported, is sticky.
	if e.lastSeen.IsZero() {
		e.member = m
	}
	e.member.HasState = e.member.HasState || m.HasState
}

// snapshot returns copies of every entry with Status set from liveness.
func (t *memberTable) snapshot(now time.Time, aliveWindow time.Duration) []*structs.ServerMember {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*structs.ServerMember, 0, len(t.members))
	for _, e := range t.members {
		m := e.member
		switch {
		case e.lastSeen.IsZero():
			m.Status = MemberStatusUnknown
		case now.Sub(e.lastSeen) <= aliveWindow:
			m.Status = MemberStatusAlive
		default:
			m.Status = MemberStatusFailed
		}
		out = append(out, &m)
	}
	return out
}

// known reports whether id is in the table.
func (t *memberTable) known(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.members[id]
	return ok
}

// remove forgets a member (after it was removed from Raft by an operator
// and is no longer answering).
func (t *memberTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.members, id)
}

// aliveWindow is how recently a member must have been seen to be alive.
func (s *Server) aliveWindow() time.Duration {
	return memberAliveRounds * s.config.RetryInterval
}

// selfMember describes this server.
func (s *Server) selfMember() structs.ServerMember {
	return structs.ServerMember{
		ID:         s.nodeID,
		Name:       s.config.Name,
		RPCAddr:    s.rpcAddr,
		Datacenter: s.config.Datacenter,
		Region:     s.config.Region,
		Status:     MemberStatusAlive,
		Leader:     s.IsLeader(),
		Bootstrap:  s.config.BootstrapExpect,
		HasState:   s.hasRaftState(),
		Version:    version.Version,
	}
}

// hasRaftState reports whether this server has Raft data: it was
// bootstrapped or has received entries from a leader.
func (s *Server) hasRaftState() bool {
	return s.hadState || s.raft.LastIndex() > 0
}

// Members returns the servers this one knows, itself included, sorted by ID.
// Leader is set on the member at the leader's address.
func (s *Server) Members() []*structs.ServerMember {
	self := s.selfMember()
	out := append(s.members.snapshot(time.Now(), s.aliveWindow()), &self)
	leader := s.Leader()
	for _, m := range out {
		m.Leader = leader != "" && m.RPCAddr == leader
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// joinLoop announces this server to every RetryJoin address and every
// known member once per RetryInterval, and bootstraps when it can.
func (s *Server) joinLoop() {
	defer s.wg.Done()
	ticker := time.NewTicker(s.config.RetryInterval)
	defer ticker.Stop()
	for {
		s.announceRound()
		s.maybeBootstrap()
		select {
		case <-s.shutdownCh:
			return
		case <-ticker.C:
		}
	}
}

// announceRound calls Status.Announce on every target concurrently and
// merges the answers.
func (s *Server) announceRound() {
	targets := make(map[string]bool)
	for _, addr := range s.config.RetryJoin {
		targets[addr] = true
	}
	for _, m := range s.members.snapshot(time.Now(), s.aliveWindow()) {
		targets[m.RPCAddr] = true
	}
	delete(targets, s.rpcAddr)

	req := structs.ServerAnnounceRequest{Member: s.selfMember()}
	var wg sync.WaitGroup
	for addr := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp structs.ServerMembersResponse
			if err := s.pool.RPC(addr, "Status.Announce", &req, &resp); err != nil {
				var hs *pool.TLSHandshakeError
				if structs.CodeOf(err) == structs.ErrCodePermissionDenied || errors.As(err, &hs) {
					// TLS: plaintext to a TLS cluster, or not a server
					// certificate. Worth seeing at the default level.
					s.logger.Warn("announce refused", "peer", addr, "error", err)
					return
				}
				s.logger.Debug("announce failed", "addr", addr, "error", err)
				return
			}
			s.mergeMembers(addr, resp.Members)
		}()
	}
	wg.Wait()
}

// mergeMembers records a peer's member list; the member at the address we
// called is the peer itself, so it counts as seen directly.
func (s *Server) mergeMembers(calledAddr string, members []*structs.ServerMember) {
	now := time.Now()
	for _, m := range members {
		if m == nil || m.ID == s.nodeID {
			continue
		}
		s.members.observe(*m, m.RPCAddr == calledAddr, now)
	}
}

// maybeBootstrap bootstraps Raft once this server, having no Raft state,
// knows BootstrapExpect servers none of which has state. The configuration
// is every known server sorted by ID, so every server computes the same one.
func (s *Server) maybeBootstrap() {
	expect := s.config.BootstrapExpect
	if expect < 2 || s.hasRaftState() {
		return
	}
	members := s.Members()
	if len(members) < expect {
		return
	}
	for _, m := range members {
		if m.HasState {
			// A cluster exists: wait for its leader to add us.
			s.logger.Debug("peer has raft state; waiting to be added", "peer", m.Name, "peer_id", m.ID)
			return
		}
	}
	if len(members) > expect {
		s.logger.Warn("more servers known than bootstrap_expect; bootstrapping with all of them",
			"expect", expect, "known", len(members))
	}
	if err := s.bootstrap(members); err != nil {
		s.logger.Error("bootstrap failed", "error", err)
	}
}

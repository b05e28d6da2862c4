package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// Leader kill: Config.KillLeaderAfter into the measured window, the
// current leader is found through the HTTP API and stopped abruptly
// (SIGKILL); the survivors are then polled until one names a new leader
// (the election time). The run goes on against the surviving servers.
const (
	electionPollEvery = 50 * time.Millisecond
	electionTimeout   = 2 * time.Minute
	// statusTimeout bounds one status or agent-self request of the
	// killer (a server under load answers in milliseconds).
	statusTimeout = 2 * time.Second
)

// KillResult is what the leader kill did and measured.
type KillResult struct {
	// AfterSeconds is the requested delay into the measured window.
	AfterSeconds float64 `json:"after_seconds"`
	// AtSeconds is when the kill was sent, since the window started
	// (the first job write); 0 when no kill happened.
	AtSeconds float64 `json:"at_seconds"`
	// Server, PID and RPCAddr name the killed leader.
	Server  string `json:"server,omitempty"`
	PID     int    `json:"pid,omitempty"`
	RPCAddr string `json:"rpc_addr,omitempty"`
	// ElectionSeconds is from the kill until a surviving server first
	// named a new leader (polled every 50 ms); 0 when none was seen.
	ElectionSeconds float64 `json:"election_seconds"`
	NewLeader       string  `json:"new_leader,omitempty"`
	// BaselinePlacedSeconds is the placed time of a run without the
	// kill, when given (Config.BaselinePlaced): the run must place
	// within it plus the election time plus KillSlack.
	BaselinePlacedSeconds float64 `json:"baseline_placed_seconds,omitempty"`
	Error                 string  `json:"error,omitempty"`
}

// KillSlack is what a leader kill may add to the placed time beyond the
// election itself (issue 6: "at most the election time plus 2 s").
const KillSlack = 2 * time.Second

// allowance is the placed time a kill run may take: the baseline
// plus the election plus KillSlack (0 when there is no baseline).
func (k *KillResult) allowance() float64 {
	if k == nil || k.BaselinePlacedSeconds == 0 {
		return 0
	}
	return k.BaselinePlacedSeconds + k.ElectionSeconds + KillSlack.Seconds()
}

// killer runs one leader kill in the background.
type killer struct {
	r     *runner
	start time.Time
	timer *time.Timer
	done  chan struct{} // closed when the kill and election poll end

	mu     sync.Mutex
	res    KillResult // guarded by mu
	status string     // progress text; guarded by mu
	// killed and elected are indexes into Addresses (-1: none); guarded
	// by mu.
	killed, elected int
}

// startKiller arms the leader kill, or returns nil when there is none.
func (r *runner) startKiller(ctx context.Context, windowStart time.Time) *killer {
	after := r.cfg.KillLeaderAfter
	if after <= 0 {
		return nil
	}
	k := &killer{r: r, start: windowStart, done: make(chan struct{}), killed: -1, elected: -1}
	k.res.AfterSeconds = after.Seconds()
	k.res.BaselinePlacedSeconds = r.cfg.BaselinePlaced.Seconds()
	k.timer = time.AfterFunc(after, func() {
		defer close(k.done)
		k.run(ctx)
	})
	return k
}

// finish cancels a kill that has not started, waits for one that has
// (its election poll), and returns what it measured with the indexes of
// the killed and the elected server (-1: none).
func (k *killer) finish() (res *KillResult, killed, elected int) {
	if k.timer.Stop() {
		k.mu.Lock()
		defer k.mu.Unlock()
		out := k.res
		out.Error = "the scenario ended before the kill"
		return &out, -1, -1
	}
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.res
	return &out, k.killed, k.elected
}

// progress is a short description for the progress line ("" before the
// kill).
func (k *killer) progress() string {
	if k == nil {
		return ""
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.status
}

func (k *killer) setStatus(format string, args ...any) {
	k.mu.Lock()
	k.status = fmt.Sprintf(format, args...)
	k.mu.Unlock()
}

func (k *killer) fail(err error) {
	k.mu.Lock()
	k.res.Error = err.Error()
	k.status = "leader kill failed: " + err.Error()
	k.mu.Unlock()
}

// run finds the leader, kills it and measures the election.
func (k *killer) run(ctx context.Context) {
	r := k.r
	idx, rpcAddrs, err := r.findLeader(ctx, r.liveIndexes())
	if err != nil {
		k.fail(fmt.Errorf("finding the leader: %w", err))
		return
	}
	pid := 0
	if idx < len(r.cfg.ServerPIDs) {
		pid = r.cfg.ServerPIDs[idx]
	}
	// Stop sending requests to it before it dies.
	r.dropClient(idx)
	killed := time.Now()
	if err := r.killServer(idx, pid); err != nil {
		k.fail(fmt.Errorf("killing %s (pid %d): %w", r.cfg.Addresses[idx], pid, err))
		return
	}
	at := killed.Sub(k.start)
	k.mu.Lock()
	k.res.AtSeconds = max(at.Seconds(), 1e-9)
	k.res.Server, k.res.PID, k.res.RPCAddr = r.cfg.Addresses[idx], pid, rpcAddrs[idx]
	k.killed = idx
	k.mu.Unlock()
	k.setStatus("leader %s killed at %s, electing", r.cfg.Addresses[idx], at.Round(100*time.Millisecond))

	leader, elapsed, err := r.waitNewLeader(ctx, rpcAddrs[idx], killed)
	if err != nil {
		k.fail(err)
		return
	}
	k.mu.Lock()
	k.res.ElectionSeconds, k.res.NewLeader = elapsed.Seconds(), leader
	for i, a := range rpcAddrs {
		if a != "" && a == leader {
			k.elected = i
		}
	}
	k.mu.Unlock()
	k.setStatus("leader killed at %s, new leader in %s", at.Round(100*time.Millisecond), elapsed.Round(time.Millisecond))
}

// killServer stops server i abruptly: Config.KillServer, or SIGKILL to
// its PID.
func (r *runner) killServer(i, pid int) error {
	if r.cfg.KillServer != nil {
		return r.cfg.KillServer(i)
	}
	if pid <= 0 {
		return errors.New("its PID is unknown (-server-pids)")
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// findLeader returns the index (into Addresses) of the current leader
// among the live servers, and every live server's RPC address (by
// index; "" for the others). The leader's RPC address comes from
// /v1/status/leader and is matched against each server's own, from
// /v1/agent/self; if no address matches, the one server whose agent self
// says it leads is taken.
func (r *runner) findLeader(ctx context.Context, live []int) (int, []string, error) {
	rpcAddrs := make([]string, len(r.clients))
	leads := -1
	var errs []error
	for _, i := range live {
		self, err := r.agentSelf(ctx, r.clients[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("agent self of %s: %w", r.cfg.Addresses[i], err))
			continue
		}
		rpcAddrs[i] = selfRPCAddr(self)
		if selfIsLeader(self) {
			leads = i
		}
	}
	var leader string
	for _, i := range live {
		l, err := r.statusLeader(ctx, r.clients[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("status leader of %s: %w", r.cfg.Addresses[i], err))
			continue
		}
		if l != "" {
			leader = l
			break
		}
	}
	for _, i := range live {
		if leader != "" && rpcAddrs[i] == leader {
			return i, rpcAddrs, nil
		}
	}
	if leads >= 0 {
		return leads, rpcAddrs, nil
	}
	if leader == "" {
		errs = append(errs, errors.New("no server names a leader"))
	} else {
		errs = append(errs, fmt.Errorf("the leader %s is none of the addresses (their RPC addresses: %q)", leader, rpcAddrs))
	}
	return -1, rpcAddrs, errors.Join(errs...)
}

// waitNewLeader polls every live server's /v1/status/leader every 50 ms
// until one names a leader other than old; it returns that leader and
// the time since killed.
func (r *runner) waitNewLeader(ctx context.Context, old string, killed time.Time) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, electionTimeout)
	defer cancel()
	type found struct {
		leader string
		at     time.Time
	}
	first := make(chan found, 1)
	var wg sync.WaitGroup
	for _, i := range r.liveIndexes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(electionPollEvery)
			defer t.Stop()
			for {
				l, err := r.statusLeader(ctx, r.clients[i])
				if err == nil && l != "" && l != old {
					select {
					case first <- found{l, time.Now()}:
					default:
					}
					cancel()
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case f := <-first:
		return f.leader, f.at.Sub(killed), nil
	default:
	}
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		return "", 0, fmt.Errorf("no new leader within %v of the kill", electionTimeout)
	}
	return "", 0, ctx.Err()
}

// statusLeader asks one agent for the leader's RPC address.
func (r *runner) statusLeader(ctx context.Context, c *nomad.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var leader string
	_, err := c.Raw().Query("/v1/status/leader", &leader, (&nomad.QueryOptions{}).WithContext(ctx))
	return leader, err
}

// agentSelf reads one agent's /v1/agent/self.
func (r *runner) agentSelf(ctx context.Context, c *nomad.Client) (*nomad.AgentSelf, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var self nomad.AgentSelf
	_, err := c.Raw().Query("/v1/agent/self", &self, (&nomad.QueryOptions{}).WithContext(ctx))
	return &self, err
}

// selfRPCAddr is the RPC address (host:port, as /v1/status/leader names
// it) an agent reports for itself: Drover's rpc_addr member tag, or
// Nomad's member address (or rpc_addr tag) with its "port" tag.
func selfRPCAddr(self *nomad.AgentSelf) string {
	tags := self.Member.Tags
	host, port := tags["rpc_addr"], tags["port"]
	if host != "" {
		if _, _, err := net.SplitHostPort(host); err == nil {
			return host
		}
	} else {
		host = self.Member.Addr
	}
	if host == "" || port == "" {
		return ""
	}
	return net.JoinHostPort(host, port)
}

// selfIsLeader reports whether an agent says it leads: Nomad's raft
// state, or Drover's raft leader flag.
func selfIsLeader(self *nomad.AgentSelf) bool {
	raft := self.Stats["raft"]
	return raft["state"] == "Leader" || raft["leader"] == "true"
}

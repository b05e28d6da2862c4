package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/agent/client/fingerprint"
	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// Files in <data dir>/client.
const (
	nodeIDFile   = "node-id"
	secretIDFile = "secret-id"
)

// minHeartbeatInterval keeps a tiny TTL from spinning the loop.
const minHeartbeatInterval = 10 * time.Millisecond

// Bounds on how long one server may take to answer the node's liveness
// calls before the client tries the next one (see registerLoop).
const (
	// minLivenessAttempt keeps a tiny TTL from giving up on servers that
	// are merely busy.
	minLivenessAttempt = 200 * time.Millisecond
	// firstRegisterAttempt bounds a registration sent before any server
	// gave a TTL.
	firstRegisterAttempt = 10 * time.Second
)

// heartbeatAttempt is how long one server may take to answer a heartbeat:
// a quarter of the TTL. A heartbeat is sent about half a TTL after the
// last one, so even two servers that do not answer leave the third a
// quarter of the TTL before the servers' TTL runs out, and the grace on
// top.
func heartbeatAttempt(ttl time.Duration) time.Duration {
	return max(ttl/4, minLivenessAttempt)
}

// registerAttempt is how long one server may take to answer a
// registration (a Raft write): half the TTL, at least a second, or
// firstRegisterAttempt before the servers gave a TTL.
func registerAttempt(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return firstRegisterAttempt
	}
	return max(ttl/2, time.Second)
}

// setupNode builds the node: persisted IDs, fingerprint, drivers, config.
func (c *Client) setupNode(clientDir string) (*structs.Node, error) {
	id, err := persistentID(filepath.Join(clientDir, nodeIDFile))
	if err != nil {
		return nil, fmt.Errorf("client: node ID: %w", err)
	}
	secret, err := persistentID(filepath.Join(clientDir, secretIDFile))
	if err != nil {
		return nil, fmt.Errorf("client: node secret ID: %w", err)
	}
	fp := fingerprint.Fingerprint(fingerprint.Config{
		DataDir: c.cfg.DataDir, NetworkAddr: c.cfg.NetworkAddr, ReachAddrs: c.servers.all(), Logger: c.logger,
		Network: c.cfg.Network,
	})
	name := c.cfg.NodeName
	if name == "" {
		name = fp.Attributes["unique.hostname"]
	}
	if name == "" {
		name = "drover-client"
	}
	res := fp.Resources
	if c.cfg.CPUTotalCompute > 0 {
		res.Cpu.CpuShares = int64(c.cfg.CPUTotalCompute)
	}
	if c.cfg.MemoryTotalMB > 0 {
		res.Memory.MemoryMB = int64(c.cfg.MemoryTotalMB)
	}
	node := &structs.Node{
		ID: id, SecretID: secret, Name: name,
		Datacenter: c.cfg.Datacenter, NodeClass: c.cfg.NodeClass, NodePool: c.nodePool(),
		HTTPAddr: c.cfg.HTTPAddr, TLSEnabled: c.cfg.HTTPTLS,
		Attributes: fp.Attributes, NodeResources: &res,
		ReservedResources:     c.cfg.Reserved,
		Meta:                  map[string]string{},
		Drivers:               map[string]*structs.DriverInfo{},
		Status:                structs.NodeStatusInit, // initialReadiness decides
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
	for k, v := range c.cfg.Meta {
		node.Meta[k] = v
	}
	for name, d := range c.drivers {
		info := d.Fingerprint()
		node.Drivers[name] = info
		for k, v := range info.Attributes {
			node.Attributes[k] = v
		}
	}
	node.HostVolumes = c.fingerprintHostVolumes()
	if c.cfg.fingerprintHook != nil {
		c.cfg.fingerprintHook(node)
	}
	node.ComputeClass()
	return node, nil
}

// persistentID reads an ID from path, or creates one there.
func persistentID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if structs.ValidName(id) == "" {
			return id, nil
		}
		return "", fmt.Errorf("%s holds an invalid ID %q", path, id)
	}
	if !os.IsNotExist(err) {
		return "", err
	}
	id := structs.GenerateUUID()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return id, nil
}

// heartbeatInterval is when to heartbeat next for a TTL: about half of it,
// less up to a tenth at random so clients spread out.
func heartbeatInterval(ttl time.Duration, r float64) time.Duration {
	d := ttl/2 - time.Duration(float64(ttl/10)*r)
	if d < minHeartbeatInterval {
		d = minHeartbeatInterval
	}
	return d
}

// registerLoop registers the node, then heartbeats within each TTL the
// servers return. When heartbeats fail for longer than the TTL (the
// servers will have marked the node down) or the servers no longer know
// the node, it registers again; when the node changed (its readiness or
// drivers: nodeUpdated), it registers again at once. Failed RPCs back off.
// It is the only sender of the node's status, so the servers see the
// client's status changes in order.
//
// Each server gets a bounded time to answer (heartbeatAttempt,
// registerAttempt): one that is cut off from the others, waiting for a
// leader it cannot reach, or unreachable itself is left for the next at
// once, and the client stays there for its later calls (serverList).
// A success after failures, or after the client moved to another server,
// restarts the allocation watch (resetWatch): its blocking query may be
// waiting on the server or connection the client left.
func (c *Client) registerLoop() {
	b := backoff.New(c.cfg.RetryBase, c.cfg.RetryLimit)
	registered := false
	var ttl, next time.Duration
	var lastOK time.Time
	troubled := false // a call failed since the last success
	moves := c.servers.moved()
	succeeded := func(failed int) {
		if m := c.servers.moved(); failed > 0 || troubled || m != moves {
			c.resetWatch()
			moves = m
		}
		troubled = false
	}
	for !c.shuttingDown() {
		if !registered {
			select {
			case <-c.nodeChanged: // this registration sends the change
			default:
			}
			sent := c.cfg.Clock.Now()
			t, failed, err := c.register(registerAttempt(ttl))
			if err != nil {
				troubled = true
				c.logger.Warn("registering the node failed; will retry", "error", err, "servers", c.servers.all())
				if !c.sleep(registerRetry(b.Next(), ttl, time.Since(lastOK))) {
					return
				}
				continue
			}
			registered, ttl, lastOK = true, t, time.Now()
			c.hbStop.ok(sent)
			succeeded(failed)
			next = heartbeatInterval(ttl, rand.Float64())
			b.Reset()
			c.registeredOnce.Do(func() { close(c.registeredCh) })
		}
		changed, ok := c.sleepOrNodeChange(next)
		if !ok {
			return
		}
		if changed {
			registered = false
			continue
		}
		sent := c.cfg.Clock.Now()
		t, failed, err := c.heartbeat(heartbeatAttempt(ttl))
		switch {
		case err == nil:
			ttl, lastOK = t, time.Now()
			c.hbStop.ok(sent)
			succeeded(failed)
			next = heartbeatInterval(ttl, rand.Float64())
			b.Reset()
		case errors.Is(err, structs.ErrNotFound):
			c.logger.Info("servers do not know this node; registering again")
			registered = false
		default:
			troubled = true
			c.logger.Warn("heartbeat failed", "error", err, "since_last_ok", time.Since(lastOK).Round(time.Millisecond))
			if time.Since(lastOK) > ttl {
				registered = false // the servers will mark the node down: register again when possible
			}
			// Retry sooner than a regular heartbeat.
			next = max(min(b.Next(), ttl/4), minHeartbeatInterval)
		}
	}
}

// reconnectWindow is how long after its last successful heartbeat a
// client that lost the servers keeps retrying at its heartbeat's pace
// before it backs off further (registerRetry).
const reconnectWindow = 30 * time.Second

// registerRetry is the wait before registering again after a failure:
// the backoff, but within reconnectWindow of the last success (since) no
// more than a quarter of the TTL, as failed heartbeats are retried, so
// that a client cut off for a while is back soon after the heal.
func registerRetry(backoff, ttl, since time.Duration) time.Duration {
	if ttl <= 0 || since >= reconnectWindow {
		return backoff
	}
	return max(min(backoff, ttl/4), minHeartbeatInterval)
}

// sleepOrNodeChange waits for d, a node change (changed), or shutdown
// (ok false).
func (c *Client) sleepOrNodeChange(d time.Duration) (changed, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, true
	case <-c.nodeChanged:
		return true, true
	case <-c.shutdownCh:
		return false, false
	}
}

// register sends Node.Register, with the node's status as its readiness
// gate left it and the node events not sent yet, giving each server
// attempt to answer, and returns the heartbeat TTL and the number of
// attempts that failed.
func (c *Client) register(attempt time.Duration) (ttl time.Duration, failed int, err error) {
	start := time.Now()
	c.nodeMu.Lock()
	node := c.node.Copy()
	events := c.pendingEvents
	c.nodeMu.Unlock()
	node.Events = events
	node.StatusUpdatedAt = time.Now().Unix()
	req := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: node.SecretID}}
	var resp structs.NodeUpdateResponse
	if failed, err = c.rpc(context.Background(), attempt, "Node.Register", req, &resp); err != nil {
		return 0, failed, err
	}
	if len(events) > 0 {
		c.nodeMu.Lock()
		c.pendingEvents = c.pendingEvents[len(events):] // sent; later ones stay
		c.nodeMu.Unlock()
	}
	c.servers.add(resp.Servers)
	ttl = resp.HeartbeatTTL
	if ttl <= 0 {
		return 0, failed, fmt.Errorf("server returned no heartbeat TTL")
	}
	metrics.MeasureSince(metricRegister, start)
	c.logger.Info("node registered", "node_id", node.ID, "status", node.Status, "heartbeat_ttl", ttl, "server", c.servers.current())
	return ttl, failed, nil
}

// heartbeat sends Node.UpdateStatus with the node's status (initializing
// until its readiness gate passed, then ready), giving each server attempt
// to answer, and returns the next TTL and the number of attempts that
// failed.
func (c *Client) heartbeat(attempt time.Duration) (ttl time.Duration, failed int, err error) {
	start := time.Now()
	id, secret := c.nodeIdentity()
	c.nodeMu.Lock()
	status := c.node.Status
	c.nodeMu.Unlock()
	req := &structs.NodeUpdateStatusRequest{
		NodeID: id, SecretID: secret, Status: status, UpdatedAt: time.Now().Unix(),
		// The secret is also the ACL token of a node's calls.
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: secret},
	}
	var resp structs.NodeUpdateResponse
	if failed, err = c.rpc(context.Background(), attempt, "Node.UpdateStatus", req, &resp); err != nil {
		incr(metricHeartbeatFailed)
		return 0, failed, err
	}
	c.servers.add(resp.Servers)
	if resp.HeartbeatTTL <= 0 {
		return 0, failed, fmt.Errorf("server returned no heartbeat TTL")
	}
	metrics.MeasureSince(metricHeartbeat, start)
	return resp.HeartbeatTTL, failed, nil
}

// fingerprintHostVolumes returns the host volumes the node offers: each
// configured host_volume whose path is a directory (nil: none). A volume
// whose directory is missing is left out, with an error in the log, so
// that nothing is placed here to fail at mount time.
func (c *Client) fingerprintHostVolumes() map[string]*structs.ClientHostVolumeConfig {
	var out map[string]*structs.ClientHostVolumeConfig
	for name, hv := range c.cfg.HostVolumes {
		if hv == nil {
			continue
		}
		st, err := os.Stat(hv.Path)
		if err != nil || !st.IsDir() {
			c.logger.Error("host volume left out: its path is not a directory", "volume", name, "path", hv.Path, "error", err)
			continue
		}
		if out == nil {
			out = make(map[string]*structs.ClientHostVolumeConfig, len(c.cfg.HostVolumes))
		}
		v := *hv
		v.Name = name
		out[name] = &v
	}
	return out
}

// nodePool is the pool the node registers in.
func (c *Client) nodePool() string {
	if c.cfg.NodePool == "" {
		return structs.NodePoolDefault
	}
	return c.cfg.NodePool
}

package client

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// Readiness defaults (client { readiness { interval, timeout } }).
const (
	DefaultReadinessInterval = 10 * time.Second
	DefaultReadinessTimeout  = 10 * time.Second
	// readinessRetryBase is the first delay after a failed check; delays
	// double up to the interval.
	readinessRetryBase = 250 * time.Millisecond
	// readinessOutputTail is how much of the command's output (its end)
	// the failure message keeps.
	readinessOutputTail = 256
	// maxPendingEvents bounds the node events kept while the servers are
	// out of reach (they keep the newest 10 too).
	maxPendingEvents = 10
)

// Readiness messages and the node event subsystem.
const (
	readinessEventSubsystem = "Readiness"
	readinessFailedPrefix   = "Node readiness check failed: "
	msgNoHealthyDriver      = "no healthy driver"
	msgNotChecked           = "readiness not checked yet"
)

// ReadinessConfig is the operator's readiness command (client { readiness
// { command, args, interval, timeout, recheck } }). The node takes no
// work until the command exits 0 within Timeout; a failed attempt is
// retried after a delay that doubles from 250 ms up to Interval.
type ReadinessConfig struct {
	Command string
	Args    []string
	// Interval caps the retry delay, and is the period of the checks
	// after the node became ready when Recheck is set (0: 10s).
	Interval time.Duration
	// Timeout bounds one run; a run past it is killed (its whole process
	// group) and counts as a failure (0: 10s).
	Timeout time.Duration
	// Recheck keeps running the command every Interval after the node is
	// ready; a failure makes the node initializing again (no new work; its
	// allocations keep running) until the command passes again.
	Recheck bool
}

func (r *ReadinessConfig) withDefaults() *ReadinessConfig {
	out := *r
	if out.Interval <= 0 {
		out.Interval = DefaultReadinessInterval
	}
	if out.Timeout <= 0 {
		out.Timeout = DefaultReadinessTimeout
	}
	return &out
}

// Readiness returns the client's readiness gate as it stands now (a copy).
func (c *Client) Readiness() structs.NodeReadiness {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	if c.node.Readiness == nil {
		return structs.NodeReadiness{}
	}
	return *c.node.Readiness
}

// initialReadiness sets the node's first status, before it is first
// registered. With no readiness command and a healthy driver, the gate has
// passed already and the node registers ready (the common path costs
// nothing); otherwise it registers initializing and readinessLoop must
// run. It reports whether the loop is needed.
func (c *Client) initialReadiness(node *structs.Node) bool {
	now := time.Now()
	r := &structs.NodeReadiness{Since: now, Command: c.cfg.Readiness != nil}
	node.Readiness = r
	if c.cfg.Readiness == nil && hasHealthyDriver(node) {
		r.Passed = true
		node.Status = structs.NodeStatusReady
		return false
	}
	// The loop's first outcome always differs from this one, so it is
	// reported (a failure with its node event).
	node.Status = structs.NodeStatusInit
	r.Message = msgNotChecked
	node.StatusDescription = r.Message
	return true
}

// hasHealthyDriver reports whether any of the node's drivers is detected
// and healthy.
func hasHealthyDriver(node *structs.Node) bool {
	for _, d := range node.Drivers {
		if d != nil && d.Detected && d.Healthy {
			return true
		}
	}
	return false
}

// readinessLoop runs the gate until it passes (and on, every interval,
// with Recheck): the drivers first, then the command. Each change of
// outcome or message is put on the node and registered (registerLoop), a
// failure with a node event.
func (c *Client) readinessLoop() {
	rc := c.readinessConfig()
	b := backoff.New(min(readinessRetryBase, rc.Interval), rc.Interval)
	for {
		ok, msg := c.checkReadiness(rc)
		if !ok {
			incr(metricReadinessFailed)
		}
		c.setReadiness(ok, msg)
		wait := rc.Interval
		switch {
		case !ok:
			wait = b.Next()
		case c.cfg.Readiness == nil || !rc.Recheck:
			return
		default:
			b.Reset()
		}
		if !c.sleep(wait) {
			return
		}
	}
}

// ProbeReadiness runs the readiness gate once now, as the loop does (a
// healthy driver, then the command with its timeout), and returns its
// outcome without changing the node or reporting anything: for a
// re-probe (e.g. of a node taken out of service) that decides for itself.
// It blocks for up to the command's timeout.
func (c *Client) ProbeReadiness() (passed bool, message string) {
	return c.checkReadiness(c.readinessConfig())
}

// readinessConfig is the configured command with defaults filled (with
// no command: the defaults alone, for the driver part of the gate).
func (c *Client) readinessConfig() *ReadinessConfig {
	if c.cfg.Readiness != nil {
		return c.cfg.Readiness.withDefaults()
	}
	return (&ReadinessConfig{}).withDefaults()
}

// checkReadiness runs the gate once: a healthy driver, then the command.
func (c *Client) checkReadiness(rc *ReadinessConfig) (bool, string) {
	c.nodeMu.Lock()
	healthy := hasHealthyDriver(c.node)
	c.nodeMu.Unlock()
	if !healthy {
		return false, msgNoHealthyDriver
	}
	if c.cfg.Readiness == nil {
		return true, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), rc.Timeout)
	defer cancel()
	go func() { // shutdown ends a run early
		select {
		case <-c.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return runReadinessCommand(ctx, rc)
}

// runReadinessCommand runs the command in its own process group; on the
// context's end the group is killed. It returns whether the command
// exited 0, and otherwise why not with the tail of its output.
func runReadinessCommand(ctx context.Context, rc *ReadinessConfig) (bool, string) {
	cmd := exec.CommandContext(ctx, rc.Command, rc.Args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	var why string
	switch {
	case err == nil:
		return true, ""
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		why = fmt.Sprintf("timed out after %s", rc.Timeout)
	case errors.As(err, &ee):
		why = ee.ProcessState.String() // "exit status 1", "signal: killed"
	default:
		why = err.Error()
	}
	if tail := strings.TrimSpace(out.String()); tail != "" {
		why += ": " + tail
	}
	return false, why
}

// setReadiness puts the gate's outcome on the node. A change of outcome or
// message is registered; a failure that differs from the last one also
// becomes a node event. Passing makes the node ready; failing makes it
// initializing (its allocations keep running; it takes no new work).
func (c *Client) setReadiness(ok bool, msg string) {
	c.nodeMu.Lock()
	prev := c.node.Readiness
	if prev != nil && prev.Passed == ok && prev.Message == msg {
		c.nodeMu.Unlock()
		return
	}
	now := time.Now()
	r := &structs.NodeReadiness{Passed: ok, Message: msg, Since: now, Command: c.cfg.Readiness != nil}
	c.node.Readiness = r
	if ok {
		c.node.Status = structs.NodeStatusReady
		c.node.StatusDescription = ""
	} else {
		c.node.Status = structs.NodeStatusInit
		c.node.StatusDescription = msg
		c.pendingEvents = append(c.pendingEvents, &structs.NodeEvent{
			Message: readinessFailedPrefix + msg, Subsystem: readinessEventSubsystem, Timestamp: now,
		})
		if over := len(c.pendingEvents) - maxPendingEvents; over > 0 { // the servers keep no more
			c.pendingEvents = c.pendingEvents[over:]
		}
	}
	c.nodeMu.Unlock()
	if ok {
		c.logger.Info("node readiness passed; the node is ready")
	} else {
		c.logger.Warn("node readiness check failed; the node stays initializing", "reason", msg)
	}
	c.nodeUpdated()
}

// tailBuffer keeps the last readinessOutputTail bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - readinessOutputTail; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

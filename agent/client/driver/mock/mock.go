package mock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/logs"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Driver is the mock driver.
type Driver struct {
	name string
}

var _ driver.Driver = (*Driver)(nil)

// New returns the mock driver registered under name (driverspec.MockName or
// driverspec.MockAlias).
func New(name string) *Driver { return &Driver{name: name} }

// Name implements driver.Driver.
func (d *Driver) Name() string { return d.name }

// Fingerprint implements driver.Driver: always healthy.
func (d *Driver) Fingerprint() *structs.DriverInfo {
	return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy",
		UpdateTime: time.Now(), Attributes: map[string]string{"driver." + d.name: "1"}}
}

// ValidateConfig implements driver.Driver.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := driverspec.MockSpec.Decode(cfg)
	return err
}

// plan is the decoded config that survives in the handle state.
type plan struct {
	exitAt     time.Time
	exitCode   int
	exitSignal int
	exitErr    string
	killAfter  time.Duration
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, cfg *driver.TaskConfig) (driver.Handle, error) {
	conf, err := driverspec.MockSpec.Decode(cfg.Config)
	if err != nil {
		return nil, driver.Unrecoverable(err)
	}
	if block, ok := conf["start_block_for"].(time.Duration); ok && block > 0 {
		t := time.NewTimer(block)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	if msg, ok := conf["start_error"].(string); ok && msg != "" {
		err := errors.New(msg)
		if rec, _ := conf["start_error_recoverable"].(bool); !rec {
			err = driver.Unrecoverable(err)
		}
		return nil, err
	}
	if s, ok := conf["stdout_string"].(string); ok && s != "" && cfg.StdoutPath != "" {
		if f, err := logs.OpenWriteEnd(cfg.StdoutPath); err == nil {
			_, _ = f.Write([]byte(s))
			f.Close()
		}
	}
	runFor, _ := conf["run_for"].(time.Duration)
	code, _ := conf["exit_code"].(int64)
	sig, _ := conf["exit_signal"].(int64)
	errMsg, _ := conf["exit_err_msg"].(string)
	killAfter, _ := conf["kill_after"].(time.Duration)
	now := time.Now()
	p := plan{exitAt: now.Add(runFor), exitCode: int(code), exitSignal: int(sig), exitErr: errMsg, killAfter: killAfter}
	st := &driver.HandleState{Driver: d.name, TaskID: cfg.ID, StartedAt: now, Data: map[string]string{
		"exit_at":      strconv.FormatInt(p.exitAt.UnixNano(), 10),
		"exit_code":    strconv.Itoa(p.exitCode),
		"exit_signal":  strconv.Itoa(p.exitSignal),
		"exit_err_msg": p.exitErr,
		"kill_after":   p.killAfter.String(),
	}}
	return newHandle(st, p), nil
}

// Recover implements driver.Driver: the task resumes its timer (a task
// whose time has passed exits at once).
func (d *Driver) Recover(st *driver.HandleState) (driver.Handle, error) {
	if st == nil || st.Data == nil {
		return nil, driver.ErrTaskGone
	}
	at, err1 := strconv.ParseInt(st.Data["exit_at"], 10, 64)
	code, err2 := strconv.Atoi(st.Data["exit_code"])
	sig, err3 := strconv.Atoi(st.Data["exit_signal"])
	ka, err4 := time.ParseDuration(st.Data["kill_after"])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, errors.Join(driver.ErrTaskGone, err)
	}
	p := plan{exitAt: time.Unix(0, at), exitCode: code, exitSignal: sig, exitErr: st.Data["exit_err_msg"], killAfter: ka}
	return newHandle(st.Copy(), p), nil
}

type handle struct {
	state *driver.HandleState
	plan  plan
	exit  *driver.Exit
	stop  chan syscall.Signal
	once  sync.Once
}

func newHandle(st *driver.HandleState, p plan) *handle {
	h := &handle{state: st, plan: p, exit: driver.NewExit(), stop: make(chan syscall.Signal, 1)}
	go h.run()
	return h
}

func (h *handle) run() {
	t := time.NewTimer(time.Until(h.plan.exitAt))
	defer t.Stop()
	res := &driver.ExitResult{ExitCode: h.plan.exitCode, Signal: h.plan.exitSignal}
	if h.plan.exitErr != "" {
		res.Err = errors.New(h.plan.exitErr)
	}
	select {
	case <-t.C:
	case sig := <-h.stop:
		if h.plan.killAfter > 0 {
			k := time.NewTimer(h.plan.killAfter)
			select {
			case <-k.C:
			case <-t.C: // finished on its own meanwhile
				k.Stop()
				h.finish(res)
				return
			case <-h.stop: // forced
				k.Stop()
				sig = syscall.SIGKILL
			}
		}
		res = &driver.ExitResult{Signal: int(sig), ExitCode: 128 + int(sig)}
	}
	h.finish(res)
}

func (h *handle) finish(res *driver.ExitResult) { h.exit.Set(res) }

// Wait implements driver.Handle.
func (h *handle) Wait(ctx context.Context) (*driver.ExitResult, error) { return h.exit.Wait(ctx) }

// Stop implements driver.Handle: the task exits after kill_after, or is
// "killed" at timeout if kill_after is longer.
func (h *handle) Stop(signal string, timeout time.Duration) error {
	sig, err := driverspec.ParseSignal(signal)
	if err != nil {
		return err
	}
	h.once.Do(func() { h.stop <- sig })
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.exit.Done():
		return nil
	case <-t.C:
	}
	select {
	case h.stop <- syscall.SIGKILL:
	default:
	}
	<-h.exit.Done()
	return nil
}

// State implements driver.Handle.
func (h *handle) State() *driver.HandleState { return h.state.Copy() }

var _ driver.StatsReporter = (*Driver)(nil)

// Mock usage: what a running mock task reports (a task does nothing, so
// fixed figures stand in for use).
const (
	MockRSS        = 4 << 20
	MockCPUPercent = 1.0
)

// TaskStats implements driver.StatsReporter with the fixed mock figures
// while the task runs.
func (d *Driver) TaskStats(_ context.Context, dh driver.Handle) (*driver.TaskResourceUsage, error) {
	h, ok := dh.(*handle)
	if !ok {
		return nil, errors.New("mock: not a mock handle")
	}
	select {
	case <-h.exit.Done():
		return nil, driver.ErrTaskGone
	default:
	}
	return &driver.TaskResourceUsage{Timestamp: time.Now().UnixNano(), ResourceUsage: &driver.ResourceUsage{
		MemoryStats: &driver.MemoryStats{RSS: MockRSS, Usage: MockRSS, Measured: []string{"RSS", "Usage"}},
		CpuStats:    &driver.CpuStats{Percent: MockCPUPercent, UserMode: MockCPUPercent, Measured: []string{"Percent", "User Mode"}},
	}}, nil
}

package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/structs"
)

// Files of a local instance's directory (<Dir>/<instance ID>/).
const (
	localTagsFile  = "tags.json"
	localConfigDir = "config" // 10-client.json and 20-extra.hcl
	localPIDFile   = "pid"
	localLogFile   = "agent.log"
	localDataDir   = "data"
	// LocalQuotaFile, present in Dir, makes every Create fail with a
	// *QuotaError (the test hook for quota back-off).
	LocalQuotaFile = "QUOTA_EXCEEDED"
)

// LocalConfig configures the local provider.
type LocalConfig struct {
	// Dir holds one directory per instance (tags, client configuration,
	// pid, log, data dir): any server process on this machine can List
	// and Destroy what another started.
	Dir string
	// Binary is the drover binary to run ("": this process's executable).
	Binary string
	// Servers returns the servers' RPC addresses for the clients'
	// configuration.
	Servers func() []string
	// Quota, when positive, is how many instances may run at once; a
	// Create beyond it fails with a *QuotaError.
	Quota int
	// ExtraConfig is HCL appended to every client's configuration (e.g.
	// plugin blocks).
	ExtraConfig string
	// StopTimeout is how long Destroy waits after SIGTERM before SIGKILL
	// (0: 10s).
	StopTimeout time.Duration
}

// Local is the local provider: each instance is a `drover agent -client`
// process on this machine, started in a session of its own (Setsid), so
// it outlives the server that started it.
type Local struct {
	cfg LocalConfig
	mu  sync.Mutex // serialises Create and Destroy
}

// NewLocal returns a local provider; Dir is created if missing.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.Dir == "" {
		return nil, errors.New("local provider: dir is required")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("local provider: %w", err)
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local provider: finding the drover binary: %w", err)
		}
		cfg.Binary = exe
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	return &Local{cfg: cfg}, nil
}

var _ Provider = (*Local)(nil)

// Create starts the instance's client agent, or returns it if it runs.
func (l *Local) Create(ctx context.Context, spec CreateSpec) (*Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if structs.ValidName(spec.ID) != "" {
		return nil, fmt.Errorf("local provider: invalid instance ID %q", spec.ID)
	}
	dir := filepath.Join(l.cfg.Dir, spec.ID)
	if in, err := l.read(spec.ID); err == nil && in.Running {
		return in, nil
	}
	if _, err := os.Stat(filepath.Join(l.cfg.Dir, LocalQuotaFile)); err == nil {
		return nil, &QuotaError{Message: "local provider: " + LocalQuotaFile + " is present"}
	}
	if l.cfg.Quota > 0 {
		list, err := l.list(nil)
		if err != nil {
			return nil, err
		}
		running := 0
		for _, in := range list {
			if in.Running {
				running++
			}
		}
		if running >= l.cfg.Quota {
			return nil, &QuotaError{Message: fmt.Sprintf("local provider: %d of %d instances running", running, l.cfg.Quota)}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, localDataDir), 0o755); err != nil {
		return nil, err
	}
	tags, err := json.Marshal(spec.Tags)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, localTagsFile), tags, 0o644); err != nil {
		return nil, err
	}
	confDir := filepath.Join(dir, localConfigDir)
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return nil, err
	}
	conf, err := l.clientConfig(spec, dir)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-client.json"), conf, 0o644); err != nil {
		return nil, err
	}
	if l.cfg.ExtraConfig != "" {
		if err := os.WriteFile(filepath.Join(confDir, "20-extra.hcl"), []byte(l.cfg.ExtraConfig+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(filepath.Join(dir, localLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(l.cfg.Binary, "agent", "-client", "-config", confDir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local provider: starting the client agent: %w", err)
	}
	pid := cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reap it if it exits while this process lives
	if err := os.WriteFile(filepath.Join(dir, localPIDFile), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return nil, err
	}
	return &Instance{ProviderID: spec.ID, Tags: spec.Tags, Running: true, Created: time.Now()}, nil
}

// clientConfig is the instance's agent configuration, in JSON (the
// meta keys have dots, which HCL's native syntax cannot name).
func (l *Local) clientConfig(spec CreateSpec, dir string) ([]byte, error) {
	var servers []string
	if l.cfg.Servers != nil {
		servers = l.cfg.Servers()
	}
	client := map[string]any{
		"enabled": true, "node_pool": spec.Pool, "servers": servers, "meta": spec.Meta,
		"reserved": map[string]any{"cpu": 0, "memory": 0},
	}
	if spec.CPU > 0 {
		client["cpu_total_compute"] = spec.CPU
	}
	if spec.MemoryMB > 0 {
		client["memory_total_mb"] = spec.MemoryMB
	}
	return json.MarshalIndent(map[string]any{
		"data_dir": filepath.Join(dir, localDataDir), "name": spec.ID, "bind_addr": "127.0.0.1",
		"ports": map[string]any{"http": 0}, "client": client,
	}, "", "  ")
}

// List returns the instances whose tags include tags.
func (l *Local) List(ctx context.Context, tags map[string]string) ([]*Instance, error) {
	return l.list(tags)
}

func (l *Local) list(tags map[string]string) ([]*Instance, error) {
	entries, err := os.ReadDir(l.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("local provider: %w", err)
	}
	var out []*Instance
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		in, err := l.read(e.Name())
		if err != nil {
			continue // not an instance directory (or half written)
		}
		match := true
		for k, v := range tags {
			if in.Tags[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, in)
		}
	}
	return out, nil
}

// read returns the instance of directory id.
func (l *Local) read(id string) (*Instance, error) {
	dir := filepath.Join(l.cfg.Dir, id)
	raw, err := os.ReadFile(filepath.Join(dir, localTagsFile))
	if err != nil {
		return nil, err
	}
	in := &Instance{ProviderID: id}
	if err := json.Unmarshal(raw, &in.Tags); err != nil {
		return nil, err
	}
	if info, err := os.Stat(filepath.Join(dir, localTagsFile)); err == nil {
		in.Created = info.ModTime()
	}
	in.Running = len(l.pids(id)) > 0
	return in, nil
}

// pids returns the live processes of instance id: the one its pid file
// names or, when that is missing (a server killed between starting the
// agent and writing the file), any process whose command line names the
// instance's directory.
func (l *Local) pids(id string) []int {
	dir := filepath.Join(l.cfg.Dir, id)
	if pid, err := l.pid(id); err == nil {
		if alive(pid, dir) {
			return []int{pid}
		}
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && alive(pid, dir) {
			out = append(out, pid)
		}
	}
	return out
}

func (l *Local) pid(id string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(l.cfg.Dir, id, localPIDFile))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// alive reports whether pid is a live (not zombie) process whose command
// line names dir (so a reused pid is not taken for the instance).
func alive(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return false
	}
	return strings.Contains(string(cmdline), dir)
}

// Destroy stops the instance's agent (SIGTERM to its session's process
// group, SIGKILL after StopTimeout) and removes its directory. An
// unknown instance is success.
func (l *Local) Destroy(ctx context.Context, providerID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if structs.ValidName(providerID) != "" {
		return fmt.Errorf("local provider: invalid instance ID %q", providerID)
	}
	dir := filepath.Join(l.cfg.Dir, providerID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, pid := range l.pids(providerID) {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		deadline := time.Now().Add(l.cfg.StopTimeout)
		for alive(pid, dir) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid, dir) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			for i := 0; i < 100 && alive(pid, dir); i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	return os.RemoveAll(dir)
}

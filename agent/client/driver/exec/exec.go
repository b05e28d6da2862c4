package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client/cgroup"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/driver/rawexec"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Name is the driver's name.
const Name = driverspec.ExecName

// DefaultUser runs tasks that name no user, as Nomad.
const DefaultUser = "nobody"

// DefaultPidsLimit bounds each task's processes and threads unless the
// plugin config sets pids_limit (a Drover addition: Nomad's exec driver
// sets no such limit).
const DefaultPidsLimit = 16384

// DefaultChrootEnv is Nomad's default chroot_env: host path -> path in
// the task's chroot. Host paths that do not exist are skipped.
func DefaultChrootEnv() map[string]string {
	m := map[string]string{}
	for _, p := range []string{"/bin", "/etc", "/lib", "/lib32", "/lib64", "/run/resolvconf", "/sbin", "/usr"} {
		m[p] = p
	}
	return m
}

// Config configures the driver: Nomad's exec plugin options and the
// client's chroot_env.
type Config struct {
	Logger hclog.Logger
	// ChrootEnv maps host paths to paths in each task's chroot, mounted
	// read-only; nil: DefaultChrootEnv.
	ChrootEnv map[string]string
	// NoPivotRoot chroots instead of pivot_root (a root on a ramdisk).
	NoPivotRoot bool
	// DefaultPidMode and DefaultIpcMode: "private" (the default) or
	// "host", for tasks that do not set pid_mode or ipc_mode.
	DefaultPidMode string
	DefaultIpcMode string
	// AllowCaps are the capabilities tasks may have; nil: Nomad's
	// defaults (driverspec.NomadDefaultCapabilities).
	AllowCaps []string
	// PidsLimit bounds each task's processes (0: DefaultPidsLimit, < 0:
	// none).
	PidsLimit int64
	// SupervisorPath is the executable started as supervisor and as the
	// task's init; default rawexec.DefaultSupervisorPath.
	SupervisorPath string
	// Cgroups overrides the detected hierarchy (tests).
	Cgroups *cgroup.Hierarchy
}

// Validate checks the plugin options.
func (c *Config) Validate() error {
	var errs []error
	for k, v := range map[string]string{"default_pid_mode": c.DefaultPidMode, "default_ipc_mode": c.DefaultIpcMode} {
		if v != "" && v != driverspec.IsolationPrivate && v != driverspec.IsolationHost {
			errs = append(errs, fmt.Errorf("%s must be %q or %q; got %q", k, driverspec.IsolationPrivate, driverspec.IsolationHost, v))
		}
	}
	for _, c := range c.AllowCaps {
		if _, ok := driverspec.CapabilityNumber(c); !ok {
			errs = append(errs, fmt.Errorf("allow_caps: unknown capability %q", c))
		}
	}
	for src, dst := range c.ChrootEnv {
		if !filepath.IsAbs(src) || !filepath.IsAbs(dst) || filepath.Clean(dst) == "/" || strings.Contains(dst, "..") {
			errs = append(errs, fmt.Errorf("chroot_env: %q = %q: both must be absolute paths, and the target not / nor with \"..\"", src, dst))
		}
	}
	return errors.Join(errs...)
}

// Driver is the exec driver.
type Driver struct {
	cfg     Config
	logger  hclog.Logger
	base    *rawexec.Driver
	cgroups *cgroup.Hierarchy // nil: unusable (see fpErr)
	fpErr   string
	// detected: the driver could run here (Linux, root) even if it is
	// unhealthy, as Nomad's fingerprint.
	detected bool
}

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.Adopter       = (*Driver)(nil)
	_ driver.StatsReporter = (*Driver)(nil)
)

// New returns the driver; Fingerprint says whether it can run tasks here.
func New(cfg Config) *Driver {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ChrootEnv == nil {
		cfg.ChrootEnv = DefaultChrootEnv()
	}
	if cfg.DefaultPidMode == "" {
		cfg.DefaultPidMode = driverspec.IsolationPrivate
	}
	if cfg.DefaultIpcMode == "" {
		cfg.DefaultIpcMode = driverspec.IsolationPrivate
	}
	if cfg.AllowCaps == nil {
		cfg.AllowCaps = driverspec.NomadDefaultCapabilities
	}
	if cfg.PidsLimit == 0 {
		cfg.PidsLimit = DefaultPidsLimit
	}
	if cfg.SupervisorPath == "" {
		cfg.SupervisorPath = rawexec.DefaultSupervisorPath
	}
	d := &Driver{cfg: cfg, logger: cfg.Logger.Named(Name)}
	d.base = rawexec.New(rawexec.Config{
		Enabled: true, Logger: cfg.Logger, SupervisorPath: cfg.SupervisorPath,
		Flavor: &rawexec.Flavor{
			Name: Name, SupervisorArg0: supervisorArg0,
			Prepare: d.prepare, Cleanup: d.cleanup, Stats: d.stats,
		},
	})
	d.cgroups, d.fpErr = d.detect()
	d.detected = runtime.GOOS == "linux" && os.Geteuid() == 0
	return d
}

// detect finds a usable cgroup hierarchy, or says why there is none.
func (d *Driver) detect() (*cgroup.Hierarchy, string) {
	if runtime.GOOS != "linux" {
		return nil, "exec driver unsupported on client OS"
	}
	if os.Geteuid() != 0 {
		return nil, "Driver must run as root"
	}
	h := d.cfg.Cgroups
	if h == nil {
		var err error
		if h, err = cgroup.Detect(); err != nil {
			return nil, "failed to discover cgroup mount point: " + err.Error()
		}
	}
	if h.Mode() == cgroup.Off {
		return nil, "no cgroup mount point found"
	}
	if miss := h.Missing(); len(miss) > 0 {
		return nil, "cgroup controllers missing: " + strings.Join(miss, ", ")
	}
	return h, ""
}

// Name implements driver.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements driver.Driver: healthy on Linux, as root, with
// the cgroup controllers a task needs; driver.exec and the cgroup version
// as attributes.
func (d *Driver) Fingerprint() *structs.DriverInfo {
	now := time.Now()
	if d.cgroups == nil {
		return &structs.DriverInfo{Detected: d.detected, Healthy: false, HealthDescription: d.fpErr, UpdateTime: now}
	}
	return &structs.DriverInfo{
		Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: now,
		Attributes: map[string]string{"driver.exec": "1", "os.cgroups.version": strings.TrimPrefix(d.cgroups.Mode().String(), "v")},
	}
}

// ValidateConfig implements driver.Driver.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := driverspec.ExecSpec.Decode(cfg)
	return err
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, cfg *driver.TaskConfig) (driver.Handle, error) {
	if d.cgroups == nil {
		return nil, driver.Unrecoverable(fmt.Errorf("%w: %s", driver.ErrDisabled, d.fpErr))
	}
	return d.base.Start(ctx, cfg)
}

// Recover implements driver.Driver.
func (d *Driver) Recover(st *driver.HandleState) (driver.Handle, error) { return d.base.Recover(st) }

// Adopt implements driver.Adopter.
func (d *Driver) Adopt(cfg *driver.TaskConfig) (driver.Handle, error) { return d.base.Adopt(cfg) }

// TaskStats implements driver.StatsReporter: the task's cgroup figures.
func (d *Driver) TaskStats(ctx context.Context, h driver.Handle) (*driver.TaskResourceUsage, error) {
	return d.base.TaskStats(ctx, h)
}

// launchConfig is what the supervisor and the task's init need beyond
// the command.
type launchConfig struct {
	TaskDir string `json:"task_dir"`
	// AllocDir is the shared alloc directory, mounted at /alloc.
	AllocDir string `json:"alloc_dir"`
	// Chroot maps host paths to paths in the chroot.
	Chroot      map[string]string `json:"chroot"`
	User        string            `json:"user"`
	UID         int               `json:"uid"`
	GID         int               `json:"gid"`
	Groups      []int             `json:"groups"`
	PidMode     string            `json:"pid_mode"`
	IpcMode     string            `json:"ipc_mode"`
	NoPivotRoot bool              `json:"no_pivot_root"`
	// Caps are a non-root task's capabilities (bounding, permitted,
	// inheritable and ambient); root keeps every capability, as Nomad's
	// legacy behaviour.
	Caps []string `json:"caps"`
	// Cgroup names the task's group; Limits are its limits.
	Cgroup string        `json:"cgroup"`
	Limits cgroup.Limits `json:"limits"`
}

// cgroupName is the task's group: "<alloc id>.<task>" (task IDs are
// "<alloc id>/<task>").
func cgroupName(taskID string) string { return strings.ReplaceAll(taskID, "/", ".") }

// prepare implements rawexec.Flavor.Prepare.
func (d *Driver) prepare(cfg *driver.TaskConfig) (*rawexec.LaunchSpec, error) {
	conf, err := driverspec.ExecSpec.Decode(cfg.Config)
	if err != nil {
		return nil, driver.Unrecoverable(err)
	}
	command := conf["command"].(string)
	args, _ := conf["args"].([]string)
	lc := &launchConfig{
		TaskDir: cfg.TaskDir, AllocDir: filepath.Join(cfg.AllocDir, "alloc"), Chroot: d.cfg.ChrootEnv,
		PidMode: mode(conf["pid_mode"], d.cfg.DefaultPidMode), IpcMode: mode(conf["ipc_mode"], d.cfg.DefaultIpcMode),
		NoPivotRoot: d.cfg.NoPivotRoot, Cgroup: cgroupName(cfg.ID), Limits: d.limits(cfg.Resources),
	}
	if cfg.AllocDir == "" {
		lc.AllocDir = filepath.Join(filepath.Dir(cfg.TaskDir), "alloc")
	}
	if err := lc.setUser(cfg.User); err != nil {
		return nil, driver.Unrecoverable(err)
	}
	if lc.UID != 0 {
		add, _ := conf["cap_add"].([]string)
		drop, _ := conf["cap_drop"].([]string)
		if lc.Caps, err = driverspec.TaskCapabilities(d.cfg.AllowCaps, add, drop); err != nil {
			return nil, driver.Unrecoverable(err)
		}
	}
	if err := giveDirs(cfg.TaskDir, lc.AllocDir, lc.UID, lc.GID); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(lc)
	if err != nil {
		return nil, err
	}
	return &rawexec.LaunchSpec{
		Path: command, Args: append([]string{command}, args...), Env: chrootEnv(cfg.Env), Dir: "/", Config: raw,
	}, nil
}

func mode(v any, def string) string {
	if s, _ := v.(string); s != "" {
		return s
	}
	return def
}

// limits are the task's cgroup limits, as Nomad sets them: memory_max
// (when set) as the hard limit with memory as the soft one, else memory
// as the hard limit; CPU shares from the MHz; reserved cores as the
// cpuset.
func (d *Driver) limits(r *structs.AllocatedTaskResources) cgroup.Limits {
	l := cgroup.Limits{PidsMax: max(d.cfg.PidsLimit, 0)}
	if r == nil {
		return l
	}
	l.MemoryBytes = r.Memory.MemoryMB << 20
	if r.Memory.MemoryMaxMB > r.Memory.MemoryMB {
		l.MemoryBytes, l.MemorySoftBytes = r.Memory.MemoryMaxMB<<20, r.Memory.MemoryMB<<20
	}
	l.CPUShares = r.Cpu.CpuShares
	if len(r.Cpu.ReservedCores) > 0 {
		cores := make([]string, len(r.Cpu.ReservedCores))
		for i, c := range r.Cpu.ReservedCores {
			cores[i] = strconv.Itoa(int(c))
		}
		l.CPUSet = strings.Join(cores, ",")
	}
	return l
}

// setUser resolves the task's user (DefaultUser when unset) on the host.
func (lc *launchConfig) setUser(name string) error {
	if name == "" {
		name = DefaultUser
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("user %q: %w", name, err)
	}
	lc.User = name
	if lc.UID, err = strconv.Atoi(u.Uid); err != nil {
		return fmt.Errorf("user %q: uid %q", name, u.Uid)
	}
	if lc.GID, err = strconv.Atoi(u.Gid); err != nil {
		return fmt.Errorf("user %q: gid %q", name, u.Gid)
	}
	gids, _ := u.GroupIds()
	lc.Groups = []int{lc.GID}
	for _, g := range gids {
		if n, err := strconv.Atoi(g); err == nil && n != lc.GID {
			lc.Groups = append(lc.Groups, n)
		}
	}
	return nil
}

// giveDirs hands the task's own writable directories (local, secrets,
// tmp) to its user, and opens the shared alloc/data and alloc/tmp to every
// task of the allocation, as Nomad does when it runs as root.
func giveDirs(taskDir, allocDir string, uid, gid int) error {
	for _, d := range []string{"local", "secrets", "tmp"} {
		p := filepath.Join(taskDir, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	for _, d := range []string{"data", "tmp"} {
		p := filepath.Join(allocDir, d)
		if err := os.MkdirAll(p, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o777); err != nil {
			return err
		}
	}
	return nil
}

// chrootEnv is the task's environment with the directory variables as
// the task sees them in its chroot.
func chrootEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		switch k {
		case "NOMAD_ALLOC_DIR":
			v = "/alloc"
		case "NOMAD_TASK_DIR":
			v = "/local"
		case "NOMAD_SECRETS_DIR":
			v = "/secrets"
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// group returns the task's cgroup, by its handle state.
func (d *Driver) group(st *driver.HandleState) (*cgroup.Group, error) {
	if d.cgroups == nil {
		return nil, errors.New(d.fpErr)
	}
	return d.cgroups.Group(cgroupName(st.TaskID))
}

// cleanup implements rawexec.Flavor.Cleanup: the task's cgroup goes,
// with anything still in it.
func (d *Driver) cleanup(st *driver.HandleState) {
	g, err := d.group(st)
	if err == nil {
		err = g.Destroy()
	}
	if err != nil {
		d.logger.Warn("removing the task's cgroup", "task_id", st.TaskID, "error", err)
	}
}

// stats implements rawexec.Flavor.Stats from the task's cgroup.
func (d *Driver) stats(st *driver.HandleState) (*driver.ResourceUsage, rawexec.CPUTimes, error) {
	g, err := d.group(st)
	if err != nil {
		return nil, rawexec.CPUTimes{}, err
	}
	s, err := g.Stats()
	if err != nil {
		return nil, rawexec.CPUTimes{}, err
	}
	ru := &driver.ResourceUsage{
		MemoryStats: &driver.MemoryStats{
			RSS: s.MemoryRSS, Cache: s.MemoryCache, Swap: s.MemorySwap, Usage: s.MemoryUsage, MaxUsage: s.MemoryMaxUsage,
			KernelUsage: s.KernelUsage, KernelMaxUsage: s.KernelMaxUsage, Measured: s.MemoryMeasured,
		},
		CpuStats: &driver.CpuStats{ThrottledPeriods: s.ThrottledPeriods, ThrottledTime: s.ThrottledTimeNs,
			Measured: []string{"System Mode", "User Mode", "Throttled Periods", "Throttled Time", "Percent"}},
	}
	return ru, rawexec.CPUTimes{Total: s.CPUTotalNs, User: s.CPUUserNs, System: s.CPUSystemNs}, nil
}

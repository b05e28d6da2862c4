package artifact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/structs"
)

// Nomad's defaults for its client's artifact block.
const (
	DefaultHTTPReadTimeout     = 30 * time.Minute
	DefaultHTTPMaxBytes        = 100 << 30 // 100 GB
	DefaultVCSTimeout          = 30 * time.Minute
	DefaultDecompressFileCount = 4096
	DefaultDecompressSize      = 100 << 30 // 100 GB
)

// Config bounds what a Getter fetches; zero fields take Nomad's defaults.
type Config struct {
	HTTPReadTimeout     time.Duration
	HTTPMaxBytes        int64
	VCSTimeout          time.Duration // each git or hg command
	DecompressFileCount int
	DecompressSize      int64
	// Timeout bounds one whole fetch (default: the longest of the
	// timeouts above plus a minute).
	Timeout time.Duration
	// Executable is the program started as the fetching child: the
	// client's own ("/proc/self/exe", the default), which this package's
	// init turns into the child.
	Executable string
}

// Getter fetches artifacts. It is safe for concurrent use.
type Getter struct{ cfg Config }

// New returns a Getter with cfg's limits.
func New(cfg Config) *Getter {
	if cfg.HTTPReadTimeout <= 0 {
		cfg.HTTPReadTimeout = DefaultHTTPReadTimeout
	}
	if cfg.HTTPMaxBytes <= 0 {
		cfg.HTTPMaxBytes = DefaultHTTPMaxBytes
	}
	if cfg.VCSTimeout <= 0 {
		cfg.VCSTimeout = DefaultVCSTimeout
	}
	if cfg.DecompressFileCount <= 0 {
		cfg.DecompressFileCount = DefaultDecompressFileCount
	}
	if cfg.DecompressSize <= 0 {
		cfg.DecompressSize = DefaultDecompressSize
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = max(cfg.HTTPReadTimeout, cfg.VCSTimeout) + time.Minute
	}
	if cfg.Executable == "" {
		cfg.Executable = "/proc/self/exe"
	}
	return &Getter{cfg: cfg}
}

// Request is one artifact of one task, its ${...} references resolved.
type Request struct {
	Artifact *structs.TaskArtifact
	// AllocDir and TaskDir are the allocation's and the task's
	// directories on the client.
	AllocDir string
	TaskDir  string
	// User is the task's user, who gets the files with Chown.
	User string
}

// ErrEscapes is wrapped by the error of a fetch whose destination, local
// source or result leads out of the allocation directory.
var ErrEscapes = errors.New("escapes the allocation directory")

// Fetch fetches one artifact into its destination. The error says why it
// failed (go-getter's own message for a failed download); ctx ends the
// fetch early (a task killed meanwhile).
func (g *Getter) Fetch(ctx context.Context, req Request) error {
	a := req.Artifact
	dest, err := resolveDest(a.RelativeDest, req.TaskDir, req.AllocDir)
	if err != nil {
		return err
	}
	src, err := sourceURL(a.GetterSource, a.GetterOptions)
	if err != nil {
		return err
	}
	stage, err := os.MkdirTemp(req.AllocDir, ".artifact-")
	if err != nil {
		return fmt.Errorf("creating the staging directory: %w", err)
	}
	defer os.RemoveAll(stage)
	tmp := filepath.Join(stage, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("creating the staging directory: %w", err)
	}
	p := &params{
		Source: src, Dst: filepath.Join(stage, "out"), Mode: a.GetterMode, Insecure: a.GetterInsecure,
		Headers: a.GetterHeaders, Pwd: req.TaskDir, AllocDir: req.AllocDir,
		HTTPReadTimeout: g.cfg.HTTPReadTimeout, HTTPMaxBytes: g.cfg.HTTPMaxBytes, VCSTimeout: g.cfg.VCSTimeout,
		DecompressFileCount: g.cfg.DecompressFileCount, DecompressSize: g.cfg.DecompressSize,
	}
	if err := g.run(ctx, p, tmp); err != nil {
		return err
	}
	if err := inspect(p.Dst); err != nil {
		return err
	}
	if a.Chown && req.User != "" && os.Geteuid() == 0 {
		if err := chown(p.Dst, req.User); err != nil {
			return err
		}
	}
	return place(req.AllocDir, p.Dst, dest, a.GetterMode == structs.GetterModeFile)
}

// run fetches p in the child process and returns its error.
func (g *Getter) run(ctx context.Context, p *params, tmp string) error {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	in, err := p.encode()
	if err != nil {
		return err
	}
	var out tailBuffer
	cmd := exec.CommandContext(ctx, g.cfg.Executable)
	cmd.Args = []string{childArg0}
	cmd.Env = childEnv(tmp)
	cmd.Dir = p.Pwd
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout, cmd.Stderr = &out, &out
	// A process group of its own: git and hg, its children, end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the fetch took longer than %s", g.cfg.Timeout)
		}
		return ctx.Err()
	}
	if msg := strings.TrimSpace(out.String()); msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("artifact getter: %w", err)
}

// childEnv is the child's whole environment: a fixed PATH, the agent's
// HOME (git and hg read their configuration there), temporary files in
// the staging directory.
func childEnv(tmp string) []string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/nonexistent"
	}
	return []string{childEnvVar + "=1", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home,
		"TMPDIR=" + tmp, "GORACE=atexit_sleep_ms=0"}
}

// sourceURL adds the options to the source's query, as Nomad does (a
// GitHub SSH address "git@github.com:org/repo" keeps its form).
func sourceURL(source string, opts map[string]string) (string, error) {
	const githubSSH = "git@github.com:"
	ssh := strings.HasPrefix(source, githubSSH)
	s := strings.TrimPrefix(source, githubSSH)
	if len(opts) == 0 {
		return source, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("parsing the source %q: %w", source, err)
	}
	q := u.Query()
	for k, v := range opts {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	if ssh {
		return githubSSH + u.String(), nil
	}
	return u.String(), nil
}

// resolveDest places a destination as Nomad does: an absolute path inside
// allocDir stays, anything else is taken relative to taskDir; the result
// must lie inside allocDir.
func resolveDest(dest, taskDir, allocDir string) (string, error) {
	out := filepath.Join(taskDir, dest)
	if filepath.IsAbs(dest) && within(filepath.Clean(dest), allocDir) {
		out = filepath.Clean(dest)
	}
	if !within(out, allocDir) {
		return "", fmt.Errorf("destination %q %w", dest, ErrEscapes)
	}
	return out, nil
}

// within reports whether p is dir or lies below it (lexically).
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// chown gives every file under dir to user.
func chown(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("chown: user %q has no numeric uid and gid", name)
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// tailBuffer keeps the last 4 KiB written to it: the child's messages.
type tailBuffer struct{ b []byte }

const tailMax = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

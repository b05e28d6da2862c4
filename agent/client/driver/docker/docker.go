package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/hashicorp/go-hclog"
	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Name is the driver's name.
const Name = driverspec.DockerName

// Timeouts of calls to the daemon.
const (
	pingTimeout = 3 * time.Second
	callTimeout = 30 * time.Second
	// closeWait bounds Close's wait for the handles' goroutines.
	closeWait = 5 * time.Second
	// killWait bounds the wait for a SIGKILLed container to exit.
	killWait = 15 * time.Second
	// logDrainWait bounds the wait, after the container exited, for its
	// last output to be written to the FIFOs.
	logDrainWait = 5 * time.Second
)

// Handle state keys (driver.HandleState.Data).
const (
	dataContainerID = "container_id"
	dataImage       = "image"
	dataImageID     = "image_id"
	dataCores       = "cores"
	dataStdout      = "stdout"
	dataStderr      = "stderr"
	dataStateDir    = "state_dir"
	dataTTY         = "tty"
)

// ErrOOMKilled is the exit error of a container the kernel killed for
// going over its memory limit; its text is Nomad's exit message.
var ErrOOMKilled = errors.New("OOM Killed")

// Driver is the docker driver. One serves every task of a client.
type Driver struct {
	cfg    Config
	logger hclog.Logger
	client *client.Client
	// clientErr is why there is no client (a bad endpoint).
	clientErr error
	images    *images
	cores     *coreSet

	// ctx ends when the driver is closed: every handle detaches.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ driver.Driver  = (*Driver)(nil)
	_ driver.Adopter = (*Driver)(nil)
)

// New returns the driver. It does not contact the daemon.
func New(cfg Config) *Driver {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.GC.ImageDelay <= 0 {
		cfg.GC.ImageDelay = DefaultImageDelay
	}
	d := &Driver{cfg: cfg, logger: cfg.Logger.Named("docker"), cores: newCoreSet()}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	if cfg.Endpoint != "" {
		opts = append(opts, client.WithHost(cfg.Endpoint))
	} else {
		opts = append(opts, client.WithHostFromEnv())
	}
	d.client, d.clientErr = client.New(opts...)
	d.images = newImages(d)
	return d
}

// Close detaches every handle (their containers keep running, for a
// later client to adopt), cancels pending image removals and closes the
// connection to the daemon.
func (d *Driver) Close() error {
	d.cancel()
	d.images.stop()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
		d.logger.Warn("some container handles did not stop within the close timeout", "timeout", closeWait)
	}
	if d.client != nil {
		return d.client.Close()
	}
	return nil
}

// Name implements driver.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements driver.Driver: detected and healthy while the
// daemon answers, with its version as driver.docker.version.
func (d *Driver) Fingerprint() *structs.DriverInfo {
	now := time.Now()
	if d.clientErr != nil {
		return &structs.DriverInfo{HealthDescription: "docker client: " + d.clientErr.Error(), UpdateTime: now}
	}
	ctx, cancel := context.WithTimeout(d.ctx, pingTimeout)
	defer cancel()
	if _, err := d.client.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return &structs.DriverInfo{HealthDescription: "Failed to connect to the docker daemon: " + err.Error(), UpdateTime: now}
	}
	v, err := d.client.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return &structs.DriverInfo{HealthDescription: "Failed to read the docker daemon's version: " + err.Error(), UpdateTime: now}
	}
	attrs := map[string]string{"driver.docker": "1", "driver.docker.version": v.Version}
	if d.cfg.AllowPrivileged {
		attrs["driver.docker.privileged.enabled"] = "true"
	}
	if d.cfg.VolumesEnabled {
		attrs["driver.docker.volumes.enabled"] = "true"
	}
	return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: now, Attributes: attrs}
}

// ValidateConfig implements driver.Driver.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := driverspec.DockerSpec.Decode(cfg)
	return err
}

// stateDir is where the driver keeps a task's files: <alloc dir>/<task>@docker
// ('@' is not allowed in task names, so it is never a task's directory).
func stateDir(cfg *driver.TaskConfig) string {
	return filepath.Join(cfg.AllocDir, cfg.TaskName+"@"+Name)
}

// containerName is the container's name: <task>-<alloc id>, as Nomad's.
func containerName(cfg *driver.TaskConfig) string { return cfg.TaskName + "-" + cfg.AllocID }

// Start implements driver.Driver: image, container, start. A config the
// client refuses (privileged, host volumes, an unknown port label) is
// unrecoverable; a pull or create failure carries the daemon's message
// and is left to the restart policy.
func (d *Driver) Start(ctx context.Context, cfg *driver.TaskConfig) (driver.Handle, error) {
	if d.clientErr != nil {
		return nil, driver.NodeFault(d.clientErr)
	}
	conf, err := driverspec.DockerSpec.Decode(cfg.Config)
	if err != nil {
		return nil, driver.Unrecoverable(err)
	}
	tc := parseTaskConfig(conf)
	var cores []int
	switch {
	case cfg.Resources != nil && len(cfg.Resources.Cpu.ReservedCores) > 0:
		for _, c := range cfg.Resources.Cpu.ReservedCores {
			cores = append(cores, int(c))
		}
	case cfg.Cores > 0:
		cores = d.cores.take(cfg.ID, cfg.Cores)
	}
	release := func() { d.cores.release(cfg.ID) }
	opts, err := d.createOptions(cfg, tc, cores)
	if err != nil {
		release()
		return nil, driver.Unrecoverable(err)
	}
	imageID, err := d.images.acquire(ctx, cfg.ID, tc)
	if err != nil {
		release()
		return nil, daemonFault(err)
	}
	release = func() {
		d.cores.release(cfg.ID)
		d.images.release(cfg.ID)
	}
	dir := stateDir(cfg)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		release()
		return nil, driver.NodeFault(fmt.Errorf("creating the driver's task directory: %w", err))
	}
	_ = os.Remove(filepath.Join(dir, logsSinceFile)) // an earlier run's
	id, err := d.createAndStart(ctx, opts)
	if err != nil {
		release()
		return nil, daemonFault(err)
	}
	st := &driver.HandleState{Driver: Name, TaskID: cfg.ID, StartedAt: time.Now(), Data: map[string]string{
		dataContainerID: id, dataImage: tc.image, dataImageID: imageID,
		dataStdout: cfg.StdoutPath, dataStderr: cfg.StderrPath, dataStateDir: dir,
	}}
	if len(cores) > 0 {
		st.Data[dataCores] = cpuset(cores)
	}
	if tc.tty {
		st.Data[dataTTY] = "true"
	}
	if ins, err := d.inspect(id); err == nil && ins.State != nil {
		st.PID = ins.State.Pid
	}
	h := d.newHandle(st, time.Time{})
	d.logger.Debug("started container", "task_id", cfg.ID, "container_id", shortID(id), "image", tc.image)
	return h, nil
}

// daemonFault marks err as the node's fault when the daemon could not be
// reached (the node's docker is down); an error the daemon answered (an
// image that does not exist, a refused option) is the task's.
func daemonFault(err error) error {
	if client.IsErrConnectionFailed(err) {
		return driver.NodeFault(err)
	}
	return err
}

// createAndStart creates the container (replacing one of the same name
// an earlier start of the task left) and starts it; a container that
// does not start is removed.
func (d *Driver) createAndStart(ctx context.Context, opts client.ContainerCreateOptions) (string, error) {
	created, err := d.client.ContainerCreate(ctx, opts)
	if cerrdefs.IsConflict(err) {
		d.removeContainer(opts.Name)
		created, err = d.client.ContainerCreate(ctx, opts)
	}
	if err != nil {
		return "", fmt.Errorf("Failed to create container: %w", err)
	}
	if _, err := d.client.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		d.removeContainer(created.ID)
		return "", fmt.Errorf("Failed to start container %s: %w", shortID(created.ID), err)
	}
	return created.ID, nil
}

// Recover implements driver.Driver: a running container is adopted, one
// that exited while no client ran is reported with its exit code (and
// removed), a missing one is driver.ErrTaskGone.
func (d *Driver) Recover(state *driver.HandleState) (driver.Handle, error) {
	if state == nil || state.Data[dataContainerID] == "" {
		return nil, fmt.Errorf("%w: no container ID saved", driver.ErrTaskGone)
	}
	if d.clientErr != nil {
		return nil, fmt.Errorf("%w: %v", driver.ErrTaskGone, d.clientErr)
	}
	id := state.Data[dataContainerID]
	ins, err := d.inspect(id)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("%w: container %s no longer exists", driver.ErrTaskGone, shortID(id))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: inspecting container %s: %v", driver.ErrTaskGone, shortID(id), err)
	}
	st := state.Copy()
	d.images.hold(st.TaskID, st.Data[dataImage])
	if c := parseCPUSet(st.Data[dataCores]); len(c) > 0 {
		d.cores.mark(st.TaskID, c)
	}
	since := readLogsSince(st.Data[dataStateDir])
	h := d.newHandle(st, since)
	running := ins.State != nil && ins.State.Running
	d.logger.Debug("re-attached to container", "task_id", st.TaskID, "container_id", shortID(id), "running", running)
	return h, nil
}

// Adopt implements driver.Adopter: a running container of the task's name
// that the previous client created but never recorded is taken over.
func (d *Driver) Adopt(cfg *driver.TaskConfig) (driver.Handle, error) {
	if d.clientErr != nil {
		return nil, fmt.Errorf("%w: %v", driver.ErrTaskGone, d.clientErr)
	}
	ins, err := d.inspect(containerName(cfg))
	if err != nil {
		return nil, fmt.Errorf("%w: no container of the task", driver.ErrTaskGone)
	}
	if ins.Config == nil || ins.Config.Labels[labelAllocID] != cfg.AllocID {
		return nil, fmt.Errorf("%w: the container of the task's name is not the task's", driver.ErrTaskGone)
	}
	if ins.State == nil || !ins.State.Running {
		// An exited container may be a run the client did record (kept
		// with gc { container = false }): only a running one is adopted.
		return nil, fmt.Errorf("%w: the task's container is not running", driver.ErrTaskGone)
	}
	st := &driver.HandleState{Driver: Name, TaskID: cfg.ID, StartedAt: time.Now(), Data: map[string]string{
		dataContainerID: ins.ID, dataImage: ins.Config.Image, dataImageID: ins.Image,
		dataStdout: cfg.StdoutPath, dataStderr: cfg.StderrPath, dataStateDir: stateDir(cfg),
	}}
	if ins.HostConfig != nil && ins.HostConfig.CpusetCpus != "" {
		st.Data[dataCores] = ins.HostConfig.CpusetCpus
	}
	if ins.Config.Tty {
		st.Data[dataTTY] = "true"
	}
	if ins.State != nil {
		st.PID = ins.State.Pid
	}
	h, err := d.Recover(st)
	if err != nil {
		return nil, err
	}
	d.logger.Info("adopted a container started before the client restarted", "task_id", cfg.ID, "container_id", shortID(ins.ID))
	return h, nil
}

// inspect inspects a container by ID or name.
func (d *Driver) inspect(id string) (*containerInfo, error) {
	ctx, cancel := context.WithTimeout(d.ctx, callTimeout)
	defer cancel()
	res, err := d.client.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	c := res.Container
	return &c, nil
}

// removeContainer removes a container (forcibly: killed if it runs),
// logging failures other than its absence.
func (d *Driver) removeContainer(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err := d.client.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		d.logger.Warn("removing a container failed", "container_id", shortID(id), "error", err)
	}
}

// shortID is a container or image ID as docker's CLI shows it.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

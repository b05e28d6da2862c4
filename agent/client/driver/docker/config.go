package docker

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults, as Nomad's docker plugin has them.
const (
	// DefaultImageDelay is how long an unused image stays before it is
	// removed (gc { image_delay }).
	DefaultImageDelay = 3 * time.Minute
	// DefaultPullTimeout bounds an image pull (image_pull_timeout).
	DefaultPullTimeout = 5 * time.Minute
	// DefaultFingerprintPeriod is how often the client re-checks the
	// daemon.
	DefaultFingerprintPeriod = 30 * time.Second
)

// Config is the docker plugin's client configuration (plugin "docker" {
// config { ... } } in the agent's file).
type Config struct {
	// Endpoint is the daemon's address ("unix:///var/run/docker.sock",
	// "tcp://host:port"); empty: DOCKER_HOST, or the local socket.
	Endpoint string
	// AllowPrivileged lets tasks set privileged = true.
	AllowPrivileged bool
	// VolumesEnabled lets tasks mount host paths outside their task
	// directory and named volumes (volumes { enabled = true }).
	VolumesEnabled bool
	// GC settings.
	GC GCConfig
	// PidsLimit, when positive, is the pids limit of tasks that set none
	// and the highest a task may set.
	PidsLimit int64
	Logger    hclog.Logger
}

// GCConfig is the plugin's gc block.
type GCConfig struct {
	// Image: remove images no task uses after ImageDelay.
	Image      bool
	ImageDelay time.Duration
	// Container: remove a task's container once it has exited.
	Container bool
}

// DefaultConfig is the plugin's configuration when the agent's file says
// nothing: Nomad's defaults (images and containers collected, images 3m
// after their last use; no privileged containers, no host volumes).
func DefaultConfig() Config {
	return Config{GC: GCConfig{Image: true, ImageDelay: DefaultImageDelay, Container: true}}
}

package docker

import (
	"context"
	"fmt"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// images pulls images (one pull per reference at a time, however many
// tasks wait for it), counts the tasks that use each image reference, and
// removes a reference gc.image_delay after its last task let it go (the
// daemon deletes the image with its last reference, and refuses while a
// container uses it).
type images struct {
	d *Driver

	mu      sync.Mutex
	pulls   map[string]*pull           // in-flight pulls by reference; guarded by mu
	holders map[string]map[string]bool // image reference -> task IDs; guarded by mu
	held    map[string]string          // task ID -> image reference; guarded by mu
	timers  map[string]*time.Timer     // image reference -> pending removal; guarded by mu
	stopped bool                       // guarded by mu
}

// pull is one pull in flight; err is set before done closes.
type pull struct {
	done chan struct{}
	err  error
}

func newImages(d *Driver) *images {
	return &images{d: d, pulls: map[string]*pull{}, holders: map[string]map[string]bool{},
		held: map[string]string{}, timers: map[string]*time.Timer{}}
}

// acquire makes the task's image present (pulling it when the daemon lacks
// it, or always with force_pull) and records that the task holds it. It
// returns the image's ID.
func (im *images) acquire(ctx context.Context, taskID string, tc *taskConfig) (string, error) {
	if !tc.forcePull {
		if id, err := im.imageID(ctx, tc.image); err == nil {
			im.hold(taskID, tc.image)
			return id, nil
		} else if !cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("Failed to inspect image %q: %w", tc.image, err)
		}
	}
	if err := im.pull(ctx, tc); err != nil {
		return "", err
	}
	id, err := im.imageID(ctx, tc.image)
	if err != nil {
		return "", fmt.Errorf("Failed to inspect image %q after pulling it: %w", tc.image, err)
	}
	im.hold(taskID, tc.image)
	return id, nil
}

func (im *images) imageID(ctx context.Context, ref string) (string, error) {
	res, err := im.d.client.ImageInspect(ctx, ref)
	if err != nil {
		return "", err
	}
	return res.ID, nil
}

// pull pulls ref, or waits for the pull of ref already in flight. The
// pull itself is bounded by the task's image_pull_timeout, not by ctx
// (other tasks may wait for it); ctx ends only this caller's wait.
func (im *images) pull(ctx context.Context, tc *taskConfig) error {
	im.mu.Lock()
	p, ok := im.pulls[tc.image]
	if !ok {
		p = &pull{done: make(chan struct{})}
		im.pulls[tc.image] = p
		go im.doPull(p, tc)
	}
	im.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (im *images) doPull(p *pull, tc *taskConfig) {
	ctx, cancel := context.WithTimeout(im.d.ctx, tc.pullTimeout)
	defer cancel()
	im.d.logger.Info("pulling image", "image", tc.image)
	start := time.Now()
	err := im.pullOnce(ctx, tc, true)
	if err != nil && tc.authSoftFail && len(tc.auth) > 0 && (cerrdefs.IsUnauthorized(err) || cerrdefs.IsPermissionDenied(err)) {
		im.d.logger.Warn("pulling with the task's credentials failed; trying without (auth_soft_fail)", "image", tc.image, "error", err)
		err = im.pullOnce(ctx, tc, false)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("Failed to pull `%s`: timed out after %v (image_pull_timeout): %w", tc.image, tc.pullTimeout, err)
		} else {
			err = fmt.Errorf("Failed to pull `%s`: %w", tc.image, err)
		}
	} else {
		im.d.logger.Info("pulled image", "image", tc.image, "duration", time.Since(start).Round(time.Millisecond))
	}
	im.mu.Lock()
	p.err = err
	delete(im.pulls, tc.image)
	im.mu.Unlock()
	close(p.done)
}

// pullOnce runs one pull through the daemon, with the task's auth block
// when withAuth, and returns the daemon's error message on failure.
func (im *images) pullOnce(ctx context.Context, tc *taskConfig, withAuth bool) error {
	var opts client.ImagePullOptions
	if withAuth && len(tc.auth) > 0 {
		str := func(k string) string { s, _ := tc.auth[k].(string); return s }
		enc, err := authconfig.Encode(registry.AuthConfig{Username: str("username"), Password: str("password"),
			ServerAddress: str("server_address")})
		if err != nil {
			return err
		}
		opts.RegistryAuth = enc
	}
	resp, err := im.d.client.ImagePull(ctx, tc.image, opts)
	if err != nil {
		return err
	}
	return resp.Wait(ctx)
}

// hold records that taskID uses image reference id, cancelling a pending
// removal.
func (im *images) hold(taskID, id string) {
	if id == "" {
		return
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if old, ok := im.held[taskID]; ok && old != id {
		im.releaseLocked(taskID)
	}
	if t := im.timers[id]; t != nil {
		t.Stop()
		delete(im.timers, id)
	}
	if im.holders[id] == nil {
		im.holders[id] = map[string]bool{}
	}
	im.holders[id][taskID] = true
	im.held[taskID] = id
}

// release records that taskID no longer uses its image; the last holder
// leaving schedules the image's removal (gc.image).
func (im *images) release(taskID string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.releaseLocked(taskID)
}

func (im *images) releaseLocked(taskID string) {
	id, ok := im.held[taskID]
	if !ok {
		return
	}
	delete(im.held, taskID)
	delete(im.holders[id], taskID)
	if len(im.holders[id]) > 0 {
		return
	}
	delete(im.holders, id)
	if !im.d.cfg.GC.Image || im.stopped {
		return
	}
	im.timers[id] = time.AfterFunc(im.d.cfg.GC.ImageDelay, func() { im.remove(id) })
}

// remove removes image reference id unless a task took it again
// meanwhile. The daemon refuses to remove an image a container (of
// anyone) still uses; that is logged and the image stays.
func (im *images) remove(id string) {
	im.mu.Lock()
	if _, pending := im.timers[id]; !pending || len(im.holders[id]) > 0 || im.stopped {
		im.mu.Unlock()
		return
	}
	delete(im.timers, id)
	im.mu.Unlock()
	ctx, cancel := context.WithTimeout(im.d.ctx, callTimeout)
	defer cancel()
	if _, err := im.d.client.ImageRemove(ctx, id, client.ImageRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		im.d.logger.Warn("removing an unused image failed", "image", id, "error", err)
		return
	}
	im.d.logger.Debug("removed an unused image", "image", id)
}

// stop cancels pending removals (the client shuts down).
func (im *images) stop() {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.stopped = true
	for id, t := range im.timers {
		t.Stop()
		delete(im.timers, id)
	}
}

// pendingRemovals lists the images waiting for removal (tests).
func (im *images) pendingRemovals() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make([]string, 0, len(im.timers))
	for id := range im.timers {
		out = append(out, id)
	}
	return out
}

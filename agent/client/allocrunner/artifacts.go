package allocrunner

import (
	"context"
	"fmt"

	"github.com/drover-project/drover/agent/client/artifact"
	"github.com/drover-project/drover/structs"
)

// defaultArtifacts fetches artifacts with Nomad's default limits when the
// runner's Config names no Getter.
var defaultArtifacts = artifact.New(artifact.Config{})

// fetchArtifacts fetches the task's artifacts before its first start, in
// order, after the task directory exists and before the templates render
// (which may read them), as Nomad's artifact hook does: a "Downloading
// Artifacts" event, then each artifact with its ${...} references
// resolved against the task's environment. An artifact fetched once is
// not fetched again when a later one fails and the task retries, nor on
// a restart. A kill or detach ends a fetch in progress.
func (tr *taskRunner) fetchArtifacts() error {
	if tr.artifactsDone || len(tr.task.Artifacts) == 0 {
		return nil
	}
	tr.update(nil, newEvent(structs.TaskDownloadingArtifacts, "Client is downloading artifacts"))
	g := tr.ar.cfg.Artifacts
	if g == nil {
		g = defaultArtifacts
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-tr.killCh:
		case <-tr.detachCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	te := buildTaskEnv(tr.ar.Alloc(), tr.tg, tr.task, tr.ar.allocDir, tr.taskDir, tr.ar.cfg.Node)
	if tr.fetched == nil {
		tr.fetched = make([]bool, len(tr.task.Artifacts))
	}
	for i, a := range tr.task.Artifacts {
		if tr.fetched[i] {
			continue
		}
		c := a.Copy()
		c.GetterSource = te.replace(c.GetterSource, te.lookupEnv)
		c.RelativeDest = te.replace(c.RelativeDest, te.lookupEnv)
		c.GetterOptions = te.value(c.GetterOptions).(map[string]string)
		c.GetterHeaders = te.value(c.GetterHeaders).(map[string]string)
		tr.logger.Debug("downloading artifact", "artifact", a.GetterSource)
		err := g.Fetch(ctx, artifact.Request{Artifact: c, AllocDir: tr.ar.allocDir.Dir, TaskDir: tr.taskDir.Dir, User: tr.task.User})
		if err != nil {
			return fmt.Errorf("failed to download artifact %q: %w", a.GetterSource, err)
		}
		tr.fetched[i] = true
	}
	tr.artifactsDone = true
	return nil
}

// afterArtifactFailure reports an artifact that could not be fetched
// ("Failed Artifact Download", as Nomad) and applies the restart policy,
// as a failed start does. It returns true when the task should try again.
func (tr *taskRunner) afterArtifactFailure(err error) bool {
	ev := newEvent(structs.TaskArtifactDownloadFailed, err.Error())
	ev.DownloadError = err.Error()
	return tr.afterExitEvent(ev, nil, err)
}

package allocrunner

import (
	"context"

	"github.com/drover-project/drover/agent/client/driver"
)

// TaskStats returns the resource usage of each running task whose driver
// reports it (driver.StatsReporter), by task name. Tasks that are not
// running, or whose usage cannot be read right now, are left out.
func (ar *AllocRunner) TaskStats(ctx context.Context) map[string]*driver.TaskResourceUsage {
	out := make(map[string]*driver.TaskResourceUsage, len(ar.tasks))
	for name, tr := range ar.tasks {
		sr, ok := tr.drv.(driver.StatsReporter)
		if !ok {
			continue
		}
		tr.mu.Lock()
		h := tr.handle
		tr.mu.Unlock()
		if h == nil {
			continue
		}
		u, err := sr.TaskStats(ctx, h)
		if err != nil {
			tr.logger.Debug("reading the task's resource usage", "error", err)
			continue
		}
		out[name] = u
	}
	return out
}

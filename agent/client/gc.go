package client

import (
	"sort"
	"time"

	"github.com/drover-project/drover/agent/client/allocrunner"
)

// gcLoop collects terminal allocations every GCInterval.
func (c *Client) gcLoop() {
	t := time.NewTicker(c.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.collect(time.Now())
		case <-c.shutdownCh:
			return
		}
	}
}

// collect removes terminal allocations (directory, logs, saved state) that
// finished GCRetention ago or more, and the oldest beyond the newest
// GCMaxAllocs terminal ones. Running allocations are never collected. The
// client remembers collected IDs so the watch does not run them again. It
// returns the IDs removed.
func (c *Client) collect(now time.Time) []string {
	type term struct {
		ar *allocrunner.AllocRunner
		at time.Time
	}
	c.allocMu.Lock()
	var terms []term
	for _, ar := range c.runners {
		if ok, at := ar.IsTerminal(); ok {
			terms = append(terms, term{ar, at})
		}
	}
	// Newest first; ties by ID so the choice is stable.
	sort.Slice(terms, func(i, j int) bool {
		if !terms[i].at.Equal(terms[j].at) {
			return terms[i].at.After(terms[j].at)
		}
		return terms[i].ar.ID() < terms[j].ar.ID()
	})
	var victims []*allocrunner.AllocRunner
	for i, t := range terms {
		if i >= c.cfg.GCMaxAllocs || now.Sub(t.at) >= c.cfg.GCRetention {
			victims = append(victims, t.ar)
			delete(c.runners, t.ar.ID()) // c.known keeps the ID: never rerun
		}
	}
	c.allocMu.Unlock()
	ids := make([]string, 0, len(victims))
	for _, ar := range victims {
		c.logger.Debug("garbage collecting allocation", "alloc_id", ar.ID())
		c.destroy(ar)
		ids = append(ids, ar.ID())
	}
	return ids
}

package server_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// opResult is one request made during a fault: when it ended and how.
type opResult struct {
	name string
	done time.Time
	err  error
}

// watchNewLeader reports when a server other than old leads, with every
// running server agreeing.
func watchNewLeader(t *testing.T, c *testcluster.Cluster, old *server.Server) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			for _, s := range c.Servers() {
				if s != old && s.IsLeader() {
					ch <- time.Now()
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(ch)
	}()
	return ch
}

// TestForwardFollowsLeaderFault: with the leader paused (as by SIGSTOP)
// or partitioned, requests sent to followers do not wait for it: each
// completes within a second of a new leader's election. A conditional
// write (check index) and a consistent read complete against the new
// leader; an unconditional write sent just after the fault either
// succeeds or fails as outcome_unknown (never hangs, never "No cluster
// leader"). After healing, no write was applied twice: each job has as
// many versions and registration evaluations as writes were applied.
func TestForwardFollowsLeaderFault(t *testing.T) {
	for _, mode := range []string{"pause", "partition"} {
		t.Run(mode, func(t *testing.T) {
			c := testcluster.NewTestCluster(t, 3)
			leader := c.WaitForLeader(t, 10*time.Second)
			li := c.Index(leader)
			var fols []*server.Server
			for _, s := range c.Servers() {
				if s != leader {
					fols = append(fols, s)
				}
			}
			cond, plain := mock.Job(), mock.Job()
			cond.ID, cond.Name = "cond", "cond"
			plain.ID, plain.Name = "plain", "plain"
			var first structs.JobRegisterResponse
			for _, j := range []*structs.Job{cond, plain} {
				if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: j.Copy()}, &first); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range fols {
				waitFor(t, 10*time.Second, func() string {
					if last, _ := f.State().LatestIndex(); last < first.Index {
						return "follower behind"
					}
					return ""
				})
			}
			condIndex := getJob(t, fols[0], cond.ID, true, first.Index).Job.JobModifyIndex

			start := time.Now()
			if mode == "pause" {
				c.Pause(t, li)
			} else {
				c.Partition(t, li)
			}
			elected := watchNewLeader(t, c, leader)

			results := make(chan opResult, 3)
			var wg sync.WaitGroup
			run := func(name string, fn func() error) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := fn()
					results <- opResult{name: name, done: time.Now(), err: err}
				}()
			}
			run("conditional write", func() error {
				j := cond.Copy()
				j.Meta = map[string]string{"v": "2"}
				var resp structs.JobRegisterResponse
				return fols[0].RPC("Job.Register", &structs.JobRegisterRequest{Job: j, EnforceIndex: true, JobModifyIndex: condIndex}, &resp)
			})
			run("unconditional write", func() error {
				j := plain.Copy()
				j.Meta = map[string]string{"v": "2"}
				var resp structs.JobRegisterResponse
				return fols[1].RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &resp)
			})
			run("consistent read", func() error {
				var resp structs.SingleJobResponse
				if err := fols[1].RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: cond.ID}, &resp); err != nil {
					return err
				}
				if resp.Job == nil {
					return errors.New("no job in the answer")
				}
				return nil
			})
			wg.Wait()
			close(results)
			at, ok := <-elected
			if !ok {
				t.Fatalf("no new leader within 20s of the %s", mode)
			}
			t.Logf("%s: new leader after %v", mode, at.Sub(start))
			plainApplied := 1
			for r := range results {
				t.Logf("%s: done after %v: %v", r.name, r.done.Sub(start), r.err)
				if late := r.done.Sub(at); late > time.Second {
					t.Errorf("%s completed %v after the new leader's election, want within 1s", r.name, late)
				}
				switch {
				case r.err == nil:
					if r.name == "unconditional write" {
						plainApplied = 2
					}
				case r.name == "unconditional write" && structs.CodeOf(r.err) == structs.ErrCodeOutcomeUnknown:
					plainApplied = -1 // one or two versions
				default:
					t.Errorf("%s: %v", r.name, r.err)
				}
			}

			c.Resume(t, li)
			c.WaitForLeader(t, 10*time.Second)
			// Every server converges; count what was applied.
			for _, s := range c.Servers() {
				waitFor(t, 10*time.Second, func() string {
					return checkApplied(s, cond.ID, 2, "")
				})
				if plainApplied > 0 {
					waitFor(t, 10*time.Second, func() string { return checkApplied(s, plain.ID, plainApplied, "") })
				}
			}
			// Give a late delivery to the old leader time to do harm.
			time.Sleep(500 * time.Millisecond)
			for _, s := range c.Servers() {
				if msg := checkApplied(s, cond.ID, 2, ""); msg != "" {
					t.Errorf("after healing: %s", msg)
				}
				if plainApplied > 0 {
					if msg := checkApplied(s, plain.ID, plainApplied, ""); msg != "" {
						t.Errorf("after healing: %s", msg)
					}
				} else if msg := checkApplied(s, plain.ID, 1, ""); msg != "" && checkApplied(s, plain.ID, 2, "") != "" {
					t.Errorf("after healing: %s", msg)
				}
			}
		})
	}
}

// checkApplied returns "" when server s holds versions of job id and
// registration evaluations for it, one per write applied.
func checkApplied(s *server.Server, id string, writes int, _ string) string {
	versions, err := s.State().JobVersionsByID(nil, structs.DefaultNamespace, id)
	if err != nil {
		return err.Error()
	}
	evals, err := s.State().EvalsByJob(nil, structs.DefaultNamespace, id)
	if err != nil {
		return err.Error()
	}
	registers := 0
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerJobRegister {
			registers++
		}
	}
	if len(versions) != writes || registers != writes {
		return fmt.Sprintf("server %s: job %s has %d versions and %d registration evaluations, want %d of each",
			s.RPCAddr(), id, len(versions), registers, writes)
	}
	return ""
}

package e2e

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// periodicChildren lists the launch times (Unix seconds) of tick's
// children as addr sees them.
func periodicChildren(t *testing.T, addr string) []int64 {
	t.Helper()
	var stubs []struct{ ID, ParentID string }
	if _, err := getJSON(addr, "/v1/jobs?stale&prefix=tick%2Fperiodic-", &stubs); err != nil {
		return nil
	}
	var out []int64
	for _, s := range stubs {
		n, err := strconv.ParseInt(strings.TrimPrefix(s.ID, "tick/periodic-"), 10, 64)
		if err != nil || s.ParentID != "tick" {
			t.Fatalf("child %+v", s)
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestPeriodicJobAcrossLeaderSIGKILL: a periodic job every 2 s on three
// server processes launches its children on time across a SIGKILL of the
// leader: no run twice, every run after the new leader took over, and at
// most the latest of the runs due while there was none.
func TestPeriodicJobAcrossLeaderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	agents := startCluster(t)
	leader := waitLeader(t, agents, "", 30*time.Second)
	body := `{"Job":{"ID":"tick","Type":"batch","Periodic":{"Spec":"*/2 * * * * * *"},"TaskGroups":[{"Name":"g","Count":1,
	  "Tasks":[{"Name":"t","Driver":"mock","Config":{"run_for":"1s"},"Resources":{"CPU":10,"MemoryMB":10}}]}]}}`
	resp, err := httpClient.Post("http://"+agents[0].httpAddr+"/v1/jobs", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}

	var killed *agent
	for _, a := range agents {
		if a.rpcAddr == leader {
			killed = a
		}
	}
	waitUntil(t, 15*time.Second, "two launches", func() bool { return len(periodicChildren(t, killed.httpAddr)) >= 2 })
	before := periodicChildren(t, killed.httpAddr)
	killed.kill()
	waitLeader(t, agents, leader, 20*time.Second)
	var survivor *agent
	for _, a := range agents {
		if a.cmd != nil {
			survivor = a
		}
	}
	var got []int64
	waitUntil(t, 20*time.Second, "three launches after the kill", func() bool {
		got = periodicChildren(t, survivor.httpAddr)
		return len(got) >= len(before)+3
	})
	t.Logf("launch times %v (%d before the SIGKILL)", got, len(before))
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] || got[i]%2 != 0 {
			t.Fatalf("launches %v: a run twice or off schedule", got)
		}
	}
	for i, want := range before {
		if got[i] != want {
			t.Fatalf("launches %v lost %v, seen before the kill", got, before)
		}
	}
	after := got[len(before)+1:]
	for i := 1; i < len(after); i++ {
		if after[i]-after[i-1] != 2 {
			t.Fatalf("launches after the new leader %v skip a run", after)
		}
	}
	if gap := got[len(before)] - before[len(before)-1]; gap > 2 {
		t.Logf("%d s without a launch around the SIGKILL (of the runs due with no leader, the latest was launched)", gap)
	}
}

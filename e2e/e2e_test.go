package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var droverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "drover-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	droverBin = filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", droverBin, "../cmd/drover")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building drover:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePorts returns n distinct TCP ports free on 127.0.0.1 right now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// agent is one drover process.
type agent struct {
	name     string
	args     []string
	httpAddr string
	rpcAddr  string
	cmd      *exec.Cmd
	log      *os.File
}

func (a *agent) start(t *testing.T) {
	t.Helper()
	a.cmd = exec.Command(droverBin, a.args...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (a *agent) kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		a.cmd.Process.Signal(syscall.SIGKILL)
		a.cmd.Wait()
		a.cmd = nil
	}
}

// startCluster starts three servers that join each other.
func startCluster(t *testing.T) []*agent {
	t.Helper()
	return startClusterIn(t, t.TempDir())
}

// startClusterIn starts three servers that join each other, their data
// and logs under base, each with the extra flags.
func startClusterIn(t *testing.T, base string, extra ...string) []*agent {
	t.Helper()
	ports := freePorts(t, 6)
	var join []string
	for i := 0; i < 3; i++ {
		join = append(join, "-retry-join", fmt.Sprintf("127.0.0.1:%d", ports[3+i]))
	}
	var agents []*agent
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("s%d", i+1)
		logf, err := os.Create(filepath.Join(base, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		a := &agent{
			name:     name,
			httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			rpcAddr:  fmt.Sprintf("127.0.0.1:%d", ports[3+i]),
			log:      logf,
		}
		a.args = append([]string{"agent", "-server", "-bootstrap-expect", "3", "-node", name}, extra...)
		a.args = append(a.args, "-data-dir", filepath.Join(base, name), "-bind", "127.0.0.1",
			"-http-port", fmt.Sprint(ports[i]), "-rpc-port", fmt.Sprint(ports[3+i]))
		a.args = append(a.args, join...)
		a.start(t)
		agents = append(agents, a)
	}
	t.Cleanup(func() {
		for _, a := range agents {
			a.kill()
			a.log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(a.log.Name())
				t.Logf("--- %s log (tail) ---\n%s", a.name, tail(string(b), 40))
			}
		}
	})
	return agents
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func getJSON(addr, path string, out any) (int, error) {
	resp, err := httpClient.Get("http://" + addr + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return resp.StatusCode, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return 200, json.Unmarshal(body, out)
}

// waitLeader polls every live agent until all agree on a leader.
// not, when set, is a leader address that does not count (one just killed).
func waitLeader(t *testing.T, agents []*agent, not string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		var leaders []string
		for _, a := range agents {
			if a.cmd == nil {
				continue
			}
			var l string
			if _, err := getJSON(a.httpAddr, "/v1/status/leader?stale", &l); err == nil && l != "" {
				leaders = append(leaders, l)
			}
		}
		if len(leaders) > 0 && allSame(leaders) && len(leaders) == live(agents) && leaders[0] != not {
			return leaders[0]
		}
		last = fmt.Sprint(leaders)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no agreed leader within %s (last seen %s)", timeout, last)
	return ""
}

func allSame(s []string) bool {
	for _, v := range s {
		if v != s[0] {
			return false
		}
	}
	return true
}

func live(agents []*agent) int {
	n := 0
	for _, a := range agents {
		if a.cmd != nil {
			n++
		}
	}
	return n
}

func registerJob(addr, id string) error {
	body := fmt.Sprintf(`{"Job":{"ID":%q,"Type":"batch","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"mock","Config":{"run_for":"1s"},"Resources":{"CPU":10,"MemoryMB":10}}]}]}}`, id)
	resp, err := httpClient.Post("http://"+addr+"/v1/jobs", "application/json", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("register %s: %d %s", id, resp.StatusCode, b)
	}
	var out struct{ EvalID string }
	if err := json.Unmarshal(b, &out); err != nil || out.EvalID == "" {
		return fmt.Errorf("register %s: no EvalID in %s", id, b)
	}
	return nil
}

// TestThreeProcessesSurviveLeaderSIGKILL drives the real binary: three
// servers bootstrap from -retry-join, acknowledged writes survive a SIGKILL
// of the leader, and the two survivors elect a new leader that serves them.
func TestThreeProcessesSurviveLeaderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	agents := startCluster(t)
	leader := waitLeader(t, agents, "", 30*time.Second)

	// Acknowledged writes, half through followers.
	var acked []string
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("job-%02d", i)
		if err := registerJob(agents[i%3].httpAddr, id); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, id)
	}

	var killed *agent
	for _, a := range agents {
		if a.rpcAddr == leader {
			killed = a
		}
	}
	if killed == nil {
		t.Fatalf("leader %s is none of the agents", leader)
	}
	killedAt := time.Now()
	killed.kill()
	newLeader := waitLeader(t, agents, leader, 20*time.Second)
	t.Logf("new leader %s elected %s after SIGKILL", newLeader, time.Since(killedAt).Round(time.Millisecond))

	for _, a := range agents {
		if a.cmd == nil {
			continue
		}
		for _, id := range acked {
			var job struct{ ID string }
			if _, err := getJSON(a.httpAddr, "/v1/job/"+id+"?stale", &job); err != nil || job.ID != id {
				// a follower may lag by a heartbeat; retry once briefly
				time.Sleep(500 * time.Millisecond)
				if _, err := getJSON(a.httpAddr, "/v1/job/"+id+"?stale", &job); err != nil || job.ID != id {
					t.Fatalf("%s lost acknowledged job %s: %v", a.name, id, err)
				}
			}
		}
	}
	// The cluster still takes writes, and the restarted server catches up
	// from its own data dir without bootstrapping again.
	for _, a := range agents {
		if a.cmd != nil {
			if err := registerJob(a.httpAddr, "after-failover"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	killed.start(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var job struct{ ID string }
		if _, err := getJSON(killed.httpAddr, "/v1/job/after-failover?stale", &job); err == nil && job.ID == "after-failover" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("restarted server did not catch up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var peers []string
	if _, err := getJSON(killed.httpAddr, "/v1/status/peers", &peers); err != nil || len(peers) != 3 {
		t.Fatalf("peers after restart = %v (%v), want 3", peers, err)
	}
}

func stringsReader(s string) *bytes.Buffer { return bytes.NewBufferString(s) }

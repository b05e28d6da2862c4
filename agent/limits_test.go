package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/rpctest"
	"github.com/drover-project/drover/structs"
)

// deepJobHCL is the job from issue 16 that overflowed the stack: about
// 150 KB, nested 75,000 deep.
func deepJobHCL() string {
	return "job \"deep\" {\n  meta {\n    a = " + strings.Repeat("[", 75000) + strings.Repeat("]", 75000) + "\n  }\n}\n"
}

func TestHTTPJobsParseRefusesDeepNesting(t *testing.T) {
	for name, src := range map[string]string{
		"brackets":  deepJobHCL(),
		"operators": "job \"deep\" {\n  meta {\n    a = " + strings.Repeat("!", 150000) + "true\n  }\n}\n",
		"blocks":    strings.Repeat("job {\n", 75000) + strings.Repeat("}\n", 75000),
	} {
		t.Run(name, func(t *testing.T) {
			body, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: src})
			rec := do(t, testHandler(newFake()), "PUT", "/v1/jobs/parse", string(body))
			if rec.Code != 400 || !strings.Contains(rec.Body.String(), "job.hcl:") {
				t.Fatalf("status %d: %.300s", rec.Code, rec.Body)
			}
		})
	}
}

// TestAgentSurvivesDeepJob sends the deep job to a real agent and checks
// it answers 400 and keeps serving.
func TestAgentSurvivesDeepJob(t *testing.T) {
	a := startDevAgent(t)
	body, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: deepJobHCL()})
	req, _ := http.NewRequest("PUT", a.HTTPURL()+"/v1/jobs/parse", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(msg), "Nesting too deep") {
		t.Fatalf("status %d: %.300s", resp.StatusCode, msg)
	}
	resp, err = http.Get(a.HTTPURL() + "/v1/status/leader")
	if err != nil {
		t.Fatalf("agent gone after the deep job: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("leader status %d", resp.StatusCode)
	}
}

func TestConfigRefusesDeepNesting(t *testing.T) {
	c := DefaultConfig()
	src := "client {\n  meta {\n    a = " + strings.Repeat("(", 75000) + "\"x\"" + strings.Repeat(")", 75000) + "\n  }\n}\n"
	err := parseConfig(c, "agent.hcl", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "agent.hcl:3:") || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("err = %v", err)
	}
	js := `{"client": ` + strings.Repeat("[", 75000) + strings.Repeat("]", 75000) + `}`
	if err := parseConfig(c, "agent.json", []byte(js)); err == nil || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("json err = %v", err)
	}
}

func TestConfigLimitsBlock(t *testing.T) {
	c := DefaultConfig()
	if c.Limits != (LimitsConfig{HTTPMaxConnsPerClient: 100, RPCMaxConnsPerClient: 100, RPCHandshakeTimeout: 5 * time.Second}) {
		t.Fatalf("defaults %+v, want Nomad's", c.Limits)
	}
	src := "limits {\n  http_max_conns_per_client = 0\n  rpc_max_conns_per_client = 7\n  rpc_handshake_timeout = \"250ms\"\n}\n"
	if err := parseConfig(c, "limits.hcl", []byte(src)); err != nil {
		t.Fatal(err)
	}
	want := LimitsConfig{HTTPMaxConnsPerClient: 0, RPCMaxConnsPerClient: 7, RPCHandshakeTimeout: 250 * time.Millisecond}
	if c.Limits != want {
		t.Fatalf("limits %+v, want %+v", c.Limits, want)
	}
	var sc server.Config
	c.Limits.serverRPCLimits(&sc)
	if sc.RPCMaxConnsPerClient != 7 || sc.RPCHandshakeTimeout != 250*time.Millisecond {
		t.Fatalf("server config %d %s", sc.RPCMaxConnsPerClient, sc.RPCHandshakeTimeout)
	}
	c.Limits.RPCMaxConnsPerClient = 0
	c.Limits.serverRPCLimits(&sc)
	if sc.RPCMaxConnsPerClient >= 0 {
		t.Fatalf("rpc_max_conns_per_client = 0 gave the server %d, want no limit (negative)", sc.RPCMaxConnsPerClient)
	}

	for src, want := range map[string]string{
		"limits {\n  rpc_max_conns_per_client = -1\n}\n":    "bad.hcl:2:30: rpc_max_conns_per_client: must not be negative",
		"limits {\n  rpc_handshake_timeout = \"0s\"\n}\n":   "bad.hcl:2:27: rpc_handshake_timeout: must be a positive duration",
		"limits {\n  https_handshake_timeout = \"5s\"\n}\n": "bad.hcl:2:3: Unsupported argument",
	} {
		err := parseConfig(DefaultConfig(), "bad.hcl", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestAgentRPCConnLimit: the agent's limits block reaches the RPC port.
func TestAgentRPCConnLimit(t *testing.T) {
	cfg := DevConfig()
	cfg.EnableDebug = false
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.Limits.RPCMaxConnsPerClient = 2
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	closeAll := rpctest.FillConnLimit(t, a.RPCAddr(), "127.0.0.1", 2)
	closeAll()
}

// TestLogsDoNotFollowTaskSymlink: a task replaces its stdout log with a
// symlink to a file outside its allocation (standing for /etc/shadow);
// GET /v1/client/fs/logs never serves that file.
func TestLogsDoNotFollowTaskSymlink(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "shadow")
	const secret = "root:$6$secret:19000:0:99999:7:::"
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startDevClientAgent(t)
	srv, c := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: c.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady
	})
	script := `echo visible; l="$NOMAD_ALLOC_DIR/logs/t.stdout.0"; rm -f "$l" && ln -s ` + secretFile + ` "$l"; exit 0`
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: rawExecJob("sneaky", structs.JobTypeBatch, script)}, &reg); err != nil {
		t.Fatal(err)
	}
	var alloc *structs.Allocation
	pollUntil(t, "allocation complete", 20*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "sneaky")
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientStatus == structs.AllocClientStatusComplete
	})
	if fi, err := os.Lstat(filepath.Join(a.DataDir(), "alloc", alloc.ID, "alloc", "logs", "t.stdout.0")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the task did not plant its symlink: %v", err)
	}
	for _, q := range []string{"?task=t&plain=true", "?task=t", "?task=t&plain=true&origin=end&offset=100"} {
		resp, err := http.Get(a.HTTPURL() + "/v1/client/fs/logs/" + alloc.ID + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "secret") || resp.StatusCode == 200 {
			t.Fatalf("%s: status %d, body %q", q, resp.StatusCode, body)
		}
	}
}

package agent

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

func TestResolvePaths(t *testing.T) {
	cases := []struct {
		name      string
		dataDir   string
		files     []string
		wantData  string
		wantFiles []string
	}{
		{name: "relative", dataDir: ".cluster/c1", files: []string{"client.hcl", "conf.d/a.hcl"},
			wantData: "/work/x/.cluster/c1", wantFiles: []string{"/work/x/client.hcl", "/work/x/conf.d/a.hcl"}},
		{name: "dot segments", dataDir: "./a/../b", wantData: "/work/x/b"},
		{name: "parent", dataDir: "../data", wantData: "/work/data"},
		{name: "absolute kept, cleaned", dataDir: "/var/lib//drover/", files: []string{"/etc/drover.hcl"},
			wantData: "/var/lib/drover", wantFiles: []string{"/etc/drover.hcl"}},
		{name: "empty stays empty", dataDir: "", wantData: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.DataDir, c.Files = tc.dataDir, tc.files
			if err := c.ResolvePaths("/work/x"); err != nil {
				t.Fatal(err)
			}
			if c.DataDir != tc.wantData {
				t.Fatalf("DataDir = %q, want %q", c.DataDir, tc.wantData)
			}
			if len(c.Files) != len(tc.wantFiles) {
				t.Fatalf("Files = %q, want %q", c.Files, tc.wantFiles)
			}
			for i := range c.Files {
				if c.Files[i] != tc.wantFiles[i] {
					t.Fatalf("Files = %q, want %q", c.Files, tc.wantFiles)
				}
			}
		})
	}
	if err := DefaultConfig().ResolvePaths("rel"); !errors.Is(err, ErrRelativeBase) {
		t.Fatalf("relative base: %v", err)
	}
}

// TestLoadConfigResolvesRelativePaths: -data-dir, a config file's data_dir
// and the config file names come out absolute, taken against the working
// directory at load time.
func TestLoadConfigResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, dir, "client.hcl", "data_dir = \"from-file\"\nclient {\n  enabled = true\n  servers = [\"127.0.0.1\"]\n}\n")

	c, err := LoadConfig([]string{"-config", "client.hcl"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "from-file"); c.DataDir != want {
		t.Fatalf("data_dir from file = %q, want %q", c.DataDir, want)
	}
	if want := filepath.Join(dir, "client.hcl"); len(c.Files) != 1 || c.Files[0] != want {
		t.Fatalf("Files = %q, want [%q]", c.Files, want)
	}

	c, err = LoadConfig([]string{"-config", "client.hcl", "-data-dir", "./flag/../data"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "data"); c.DataDir != want {
		t.Fatalf("-data-dir = %q, want %q", c.DataDir, want)
	}
}

// TestAgentRelativeDataDirRunsRawExec: an agent loaded with a relative
// -data-dir (as scripts/cluster.sh starts its clients) runs a raw_exec task
// to completion. The task's supervisor runs in "/", so a relative task
// directory once failed the start with "fork/exec /bin/sh: no such file or
// directory".
func TestAgentRelativeDataDirRunsRawExec(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := LoadConfig([]string{"-dev", "-data-dir", "data", "-http-port", "0", "-rpc-port", "0",
		"-node", "rel-client", "-log-level", "error"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	c := a.Client()
	alloc := runBatchOnDevAgent(t, a, "rel", "echo ran in $PWD; exit 0")
	ts := alloc.TaskStates.MustMap()["t"]
	if alloc.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %s; task events: %+v", alloc.ClientStatus, eventsOf(ts))
	}
	r, err := c.TaskLogs(alloc.ID, "t", "stdout", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ := io.ReadAll(r)
	if want := "ran in " + filepath.Join(dir, "data", "alloc", alloc.ID, "t") + "\n"; string(out) != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	if want := filepath.Join(dir, "data"); a.DataDir() != want {
		t.Fatalf("agent data dir %q, want %q", a.DataDir(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "alloc", alloc.ID)); err != nil {
		t.Fatalf("allocation directory not under the data dir: %v", err)
	}
}

// eventsOf renders a task state's events for a failure message.
func eventsOf(ts *structs.TaskState) []string {
	if ts == nil {
		return nil
	}
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type+": "+e.DisplayMessage)
	}
	return out
}

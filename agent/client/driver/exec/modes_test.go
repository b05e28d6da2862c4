package exec

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestModesUsersAndCapabilities: pid_mode = "host" shows the host's
// processes, no_pivot_root chroots, a root task keeps its capabilities
// while nobody gets only the computed set, and an added capability the
// plugin does not allow fails the start naming it.
func TestModesUsersAndCapabilities(t *testing.T) {
	needRoot(t)
	capEff := `grep CapEff /proc/self/status | tr -d ' \t'`
	// Root keeps the client's own capabilities.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var ownCaps string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "CapEff:") {
			ownCaps = strings.Join(strings.Fields(line), "")
		}
	}
	cases := []struct {
		name   string
		cfg    Config
		user   string
		config map[string]any
		want   []string // substrings of stdout
		err    string   // start error substring
	}{
		{name: "host pid mode", config: map[string]any{"pid_mode": "host"},
			want: []string{"many processes"}},
		{name: "no_pivot_root", cfg: Config{NoPivotRoot: true}, want: []string{"hostname"}},
		{name: "root keeps every capability", user: "root", want: []string{"uid=0", ownCaps}},
		{name: "nobody with net_raw dropped to chown", config: map[string]any{"cap_drop": []any{"all"}, "cap_add": []any{"CAP_CHOWN"}},
			want: []string{"uid=65534", "CapEff:0000000000000001"}},
		{name: "cap_add outside allow_caps", config: map[string]any{"cap_add": []any{"net_raw"}},
			err: "driver does not allow the following capabilities: net_raw"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := New(tc.cfg)
			script := `echo "uid=$(id -u)"; ` + capEff + `; [ $(ls /proc | grep -c '^[0-9]') -gt 10 ] && echo many processes; echo hostname`
			conf := sh(script)
			for k, v := range tc.config {
				conf[k] = v
			}
			cfg, stop := taskEnv(t, "modes"+string(rune('a'+i)), conf, nil)
			cfg.User = tc.user
			h, err := d.Start(context.Background(), cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("start error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res := waitExit(t, h, 20*time.Second); !res.Successful() {
				t.Fatalf("result %v", res)
			}
			out, errOut := stop()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout %q lacks %q (stderr %q)", out, w, errOut)
				}
			}
		})
	}
}

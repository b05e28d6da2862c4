package jobspec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// The disconnect settings read the same from HCL and from Nomad's JSON,
// in both of Nomad's styles, and validation refuses by name what Drover
// does not do.
func TestDisconnectHCLAndJSON(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	yes := true
	tests := []struct {
		name, hcl, json string
		want            func(tg *structs.TaskGroup) bool
		refused         string // "": valid
	}{
		{
			name: "stop_after_client_disconnect",
			hcl:  `stop_after_client_disconnect = "90s"`,
			json: `"StopAfterClientDisconnect": 90000000000`,
			want: func(tg *structs.TaskGroup) bool {
				return reflect.DeepEqual(tg.StopAfterClientDisconnect, d(90*time.Second)) && tg.Disconnect == nil
			},
		},
		{
			name: "disconnect stop_on_client_after",
			hcl:  `disconnect { stop_on_client_after = "1m" }`,
			json: `"Disconnect": {"LostAfter": null, "Replace": null, "Reconcile": null, "StopOnClientAfter": 60000000000}`,
			want: func(tg *structs.TaskGroup) bool {
				return reflect.DeepEqual(tg.Disconnect, &structs.DisconnectStrategy{StopOnClientAfter: d(time.Minute),
					Replace: &yes, Reconcile: structs.ReconcileOptionBestScore})
			},
		},
		{
			name: "disconnect replace and reconcile",
			hcl:  "disconnect {\n replace = true\n reconcile = \"keep_original\"\n}",
			json: `"Disconnect": {"Replace": true, "Reconcile": "keep_original"}`,
			want: func(tg *structs.TaskGroup) bool {
				return reflect.DeepEqual(tg.Disconnect, &structs.DisconnectStrategy{Replace: &yes, Reconcile: "keep_original"})
			},
		},
		{
			name: "max_client_disconnect",
			hcl:  `max_client_disconnect = "1h"`,
			json: `"MaxClientDisconnect": 3600000000000`,
			want: func(tg *structs.TaskGroup) bool { return reflect.DeepEqual(tg.MaxClientDisconnect, d(time.Hour)) },
		},
		{
			name: "disconnect lost_after",
			hcl:  `disconnect { lost_after = "6h" }`,
			json: `"Disconnect": {"LostAfter": 21600000000000}`,
			want: func(tg *structs.TaskGroup) bool { return tg.Disconnect.LostAfter == 6*time.Hour },
		},
		{
			name:    "both styles",
			hcl:     "stop_after_client_disconnect = \"1m\"\ndisconnect { stop_on_client_after = \"1m\" }",
			json:    `"StopAfterClientDisconnect": 60000000000, "Disconnect": {"StopOnClientAfter": 60000000000}`,
			want:    func(tg *structs.TaskGroup) bool { return tg.Disconnect != nil && tg.StopAfterClientDisconnect != nil },
			refused: "TaskGroups[0].Disconnect: a group cannot have both a disconnect block and stop_after_client_disconnect",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := `job "web" {
  group "api" {
    ` + tc.hcl + `
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`
			fromHCL, err := Parse("web.nomad.hcl", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "web", "TaskGroups": [{"Name": "api", `+tc.json+`,
				"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			for what, job := range map[string]*structs.Job{"HCL": fromHCL, "JSON": fromJSON} {
				job.Canonicalize()
				if !tc.want(job.TaskGroups[0]) {
					t.Errorf("%s: group %+v (disconnect %+v)", what, job.TaskGroups[0], job.TaskGroups[0].Disconnect)
				}
				err := job.Validate()
				switch {
				case tc.refused == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
					t.Errorf("%s: validation %v, want %q", what, err, tc.refused)
				}
			}
			a, b := fromHCL.TaskGroups[0], fromJSON.TaskGroups[0]
			if !reflect.DeepEqual(a.MaxClientDisconnect, b.MaxClientDisconnect) ||
				!reflect.DeepEqual(a.StopAfterClientDisconnect, b.StopAfterClientDisconnect) ||
				!reflect.DeepEqual(a.Disconnect, b.Disconnect) {
				t.Errorf("HCL and JSON differ: %+v %+v / %+v %+v", a, a.Disconnect, b, b.Disconnect)
			}
		})
	}
}

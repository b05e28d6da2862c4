package jobspec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

const servicesHCL = `job "web" {
  group "g" {
    service {
      name     = "web-${NOMAD_GROUP_NAME}"
      provider = "nomad"
      port     = "http"
      tags     = ["a", "b"]
      task     = "server"
      meta {
        version = "1"
      }
      check_restart {
        limit = 3
      }
      check {
        type     = "http"
        path     = "/health"
        method   = "POST"
        protocol = "https"
        interval = "10s"
        timeout  = "2s"
        task     = "server"
        tls_skip_verify = true
        body     = "ping"
        header {
          Authorization = ["Basic x"]
        }
        check_restart {
          grace = "30s"
        }
      }
    }
    task "server" {
      driver = "raw_exec"
      service {
        provider     = "nomad"
        port         = 8080
        address_mode = "host"
        check {
          name     = "alive"
          type     = "script"
          command  = "/bin/true"
          args     = ["-x"]
          interval = "5s"
          timeout  = "1s"
          initial_status = "passing"
          success_before_passing   = 2
          failures_before_critical = 3
        }
      }
    }
  }
}`

// The same job as Nomad's CLI sends it (api.Job, no Canonicalize).
const servicesJSON = `{"Job": {"ID": "web", "Name": "web", "TaskGroups": [{"Name": "g",
  "Services": [{"Name": "web-${NOMAD_GROUP_NAME}", "Provider": "nomad", "PortLabel": "http",
    "Tags": ["a", "b"], "TaskName": "server", "Meta": {"version": "1"}, "CheckRestart": {"Limit": 3, "Grace": null},
    "Checks": [{"Type": "http", "Path": "/health", "Method": "POST", "Protocol": "https",
      "Interval": 10000000000, "Timeout": 2000000000, "TaskName": "server", "TLSSkipVerify": true,
      "Body": "ping", "Header": {"Authorization": ["Basic x"]}, "CheckRestart": {"Grace": 30000000000},
      "Expose": false, "GRPCUseTLS": false}]}],
  "Tasks": [{"Name": "server", "Driver": "raw_exec",
    "Services": [{"Provider": "nomad", "PortLabel": "8080", "AddressMode": "host", "Cluster": "default",
      "Checks": [{"Name": "alive", "Type": "script", "Command": "/bin/true", "Args": ["-x"],
        "Interval": 5000000000, "Timeout": 1000000000, "InitialStatus": "passing",
        "SuccessBeforePassing": 2, "FailuresBeforeCritical": 3}]}]}]}]}}`

// TestParseServices: the service, check, check_restart and header blocks
// in HCL and Nomad's JSON give the same job; the server's defaults fill
// in names, modes and the service's check_restart under the check's.
func TestParseServices(t *testing.T) {
	hcl := mustParse(t, servicesHCL, nil)
	js, err := Parse("job.json", []byte(servicesJSON), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hcl, js) {
		t.Fatalf("HCL and JSON differ:\n%s\n%s", mustJSON(t, hcl), mustJSON(t, js))
	}
	// The group's network block (parsed on the ports branch) names the
	// label.
	hcl.TaskGroups[0].Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
	hcl.Canonicalize()
	if err := hcl.Validate(); err != nil {
		t.Fatal(err)
	}
	gs := hcl.TaskGroups[0].Services[0]
	if gs.Name != "web-g" || gs.AddressMode != "auto" || gs.OnUpdate != "require_healthy" || gs.TaskName != "server" {
		t.Fatalf("group service = %+v", gs)
	}
	gc := gs.Checks[0]
	if want := (&structs.CheckRestart{Limit: 3, Grace: 30 * time.Second}); !reflect.DeepEqual(gc.CheckRestart, want) {
		t.Fatalf("merged check_restart = %+v; want %+v", gc.CheckRestart, want)
	}
	if gc.Name != `service: "web-g" check` {
		t.Fatalf("check name = %q", gc.Name)
	}
	ts := hcl.TaskGroups[0].Tasks[0].Services[0]
	if ts.Name != "web-g-server" || ts.TaskName != "server" || ts.PortLabel != "8080" || ts.Checks[0].TaskName != "server" {
		t.Fatalf("task service = %+v", ts)
	}
}

// TestParseServicesRefused: Consul-only arguments and blocks are refused
// by name in HCL and JSON.
func TestParseServicesRefused(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"connect block", minimal(`service {
  provider = "nomad"
  connect {}
}`), `Drover does not support the "connect" block in a service block`},
		{"canary tags", minimal(`service {
  canary_tags = ["x"]
}`), `Drover does not support the "canary_tags" argument in a service block`},
		{"grpc_service", minimal(`service {
  check {
    grpc_service = "x"
  }
}`), `Drover does not support the "grpc_service" argument in a check block`},
		{"json connect", `{"Job": {"ID": "j", "TaskGroups": [{"Name": "g", "Services": [{"Connect": {"Native": true}}],
		  "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}}`,
			"Job.TaskGroups[0].Services[0].Connect: Drover does not support Consul Connect"},
		{"json expose", `{"Job": {"ID": "j", "TaskGroups": [{"Name": "g",
		  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Services": [{"Checks": [{"Expose": true}]}]}]}]}}`,
			"Job.TaskGroups[0].Tasks[0].Services[0].Checks[0].Expose: Drover does not support expose (Consul Connect)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.hcl", []byte(tc.src), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}

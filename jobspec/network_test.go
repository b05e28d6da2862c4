package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

// The network block in HCL and in Nomad's JSON (as Nomad's CLI sends it,
// every field present, nulls included) give the same job.
func TestParseNetworkHCLAndJSON(t *testing.T) {
	hcl := `job "web" {
  group "g" {
    network {
      mode = "host"
      port "http" {}
      port "admin" {
        static       = 8080
        to           = 80
        host_network = "public"
      }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      resources {
        network {
          port "legacy" {}
        }
      }
    }
  }
}`
	json := `{"Job": {"ID": "web", "Name": "web", "TaskGroups": [{"Name": "g", "Count": null,
	  "Networks": [{"Mode": "host", "Device": "", "CIDR": "", "IP": "", "Hostname": "", "MBits": null, "DNS": null, "CNI": null,
	    "ReservedPorts": [{"Label": "admin", "Value": 8080, "To": 80, "HostNetwork": "public", "IgnoreCollision": false}],
	    "DynamicPorts": [{"Label": "http", "Value": 0, "To": 0, "HostNetwork": "", "IgnoreCollision": false}]}],
	  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"},
	    "Resources": {"Networks": [{"DynamicPorts": [{"Label": "legacy"}]}]}}]}]}}`
	fromHCL := mustParse(t, hcl, nil)
	fromJSON := mustParse(t, json, nil)
	want := []*structs.NetworkResource{{Mode: "host",
		ReservedPorts: []structs.Port{{Label: "admin", Value: 8080, To: 80, HostNetwork: "public"}},
		DynamicPorts:  []structs.Port{{Label: "http"}}}}
	if !reflect.DeepEqual(fromHCL.TaskGroups[0].Networks, want) {
		t.Fatalf("HCL networks = %s", mustJSON(t, fromHCL.TaskGroups[0].Networks))
	}
	for _, j := range []*structs.Job{fromHCL, fromJSON} {
		j.Canonicalize()
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(fromHCL, fromJSON) {
		t.Fatalf("HCL and JSON differ:\n%s\n%s", mustJSON(t, fromHCL), mustJSON(t, fromJSON))
	}
}

// Bad network blocks are refused at registration, each naming its field.
func TestValidateNetworks(t *testing.T) {
	cases := []struct{ name, network, task, want string }{
		{"duplicate label", `port "a" {}
      port "a" { static = 80 }`, "", `TaskGroups[0].Networks[0].DynamicPorts[0].Label: port label "a" is already used by TaskGroups[0].Networks[0].ReservedPorts[0]`},
		{"duplicate label with task", `port "a" {}`, "network {\n port \"a\" {}\n}", `TaskGroups[0].Tasks[0].Resources.Networks[0].DynamicPorts[0].Label: port label "a" is already used`},
		{"static out of range", `port "a" { static = 70000 }`, "", `ReservedPorts[0].Value: static port "a" must be between 1 and 65535; got 70000`},
		{"negative static", `port "a" { static = -2 }`, "", `ReservedPorts[0].Value: static port "a" must be between 1 and 65535; got -2`},
		{"to out of range", `port "a" { to = 65536 }`, "", `DynamicPorts[0].To: must be between -1 and 65535; got 65536`},
		{"same static twice", `port "a" { static = 80 }
      port "b" { static = 80 }`, "", `ReservedPorts[1].Value: static port 80 is already reserved by port "a"`},
		{"unknown mode", `mode = "weird"`, "", `Networks[0].Mode: must be "host", "bridge", "none" or "cni/<name>"; got "weird"`},
		{"bridge", `mode = "bridge"`, "", `Networks[0].Mode: Drover does not support bridge networking`},
		{"cni", `mode = "cni/mynet"`, "", `Drover does not support CNI networks`},
		{"none with ports", `mode = "none"
      port "a" {}`, "", `mode "none" gives the group no ports`},
		{"mbits", `mbits = 10`, "", `Networks[0].MBits: Drover does not support network bandwidth`},
		{"hostname", `hostname = "x"`, "", `Networks[0].Hostname: Drover does not support setting the hostname`},
		{"dns", `dns { servers = ["1.1.1.1"] }`, "", `Networks[0].DNS: Drover does not support the dns block`},
		{"task bridge", ``, "network {\n mode = \"bridge\"\n}", `Tasks[0].Resources.Networks[0].Mode: Drover does not support bridge networking`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := `job "j" {
  group "g" {
    network {
      ` + tc.network + `
    }
    task "t" {
      driver = "raw_exec"
      resources {
        ` + tc.task + `
      }
    }
  }
}`
			job := mustParse(t, src, nil)
			job.Canonicalize()
			err := job.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
	t.Run("two network blocks", func(t *testing.T) {
		job := mustParse(t, `job "j" {
  group "g" {
    network {}
    network {}
    task "t" { driver = "raw_exec" }
  }
}`, nil)
		job.Canonicalize()
		if err := job.Validate(); err == nil || !strings.Contains(err.Error(), "TaskGroups[0].Networks: only one network block is allowed per group; got 2") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("mode none without ports", func(t *testing.T) {
		job := mustParse(t, `job "j" {
  group "g" {
    network { mode = "none" }
    task "t" { driver = "raw_exec" }
  }
}`, nil)
		job.Canonicalize()
		if err := job.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// Arguments and blocks Nomad has in a network block and Drover does not
// act on are refused by name, in HCL and in JSON.
func TestNetworkUnsupported(t *testing.T) {
	_, err := Parse("t.hcl", []byte(`job "j" {
  group "g" {
    network {
      device = "eth0"
      port "a" { ignore_collision = true }
    }
    task "t" { driver = "raw_exec" }
  }
}`), nil)
	if err == nil || !strings.Contains(err.Error(), `Drover does not support the "device" argument in a network block`) ||
		!strings.Contains(err.Error(), `Drover does not support the "ignore_collision" argument in a port block`) {
		t.Fatalf("err = %v", err)
	}
	_, err = Parse("t.json", []byte(`{"ID": "j", "TaskGroups": [{"Name": "g", "Networks": [{"CNI": {"Args": {"a": "b"}},
	  "DynamicPorts": [{"Label": "a", "IgnoreCollision": true}]}], "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`), nil)
	if err == nil || !strings.Contains(err.Error(), `Job.TaskGroups[0].Networks[0].CNI: Drover does not support CNI networks`) ||
		!strings.Contains(err.Error(), `Job.TaskGroups[0].Networks[0].DynamicPorts[0].IgnoreCollision: Drover does not support ignore_collision`) {
		t.Fatalf("err = %v", err)
	}
}

package jobspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	nomad "github.com/hashicorp/nomad/api"
)

const templateHCL = `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      template {
        data = <<EOH
addr={{ range nomadService "web" }}{{ .Address }}:{{ .Port }}{{ end }}
EOH
        destination          = "local/app.env"
        env                  = true
        change_mode          = "script"
        change_script {
          command       = "/bin/reload"
          args          = ["-now"]
          timeout       = "9s"
          fail_on_error = true
        }
        splay                = "0s"
        perms                = "0600"
        uid                  = 1000
        gid                  = 1001
        left_delimiter       = "[["
        right_delimiter      = "]]"
        error_on_missing_key = true
        wait {
          min = "2s"
          max = "10s"
        }
      }
      template {
        source        = "local/in.tpl"
        destination   = "secrets/out"
        change_mode   = "signal"
      }
      template {
        data        = "x"
        destination = "local/x"
        change_mode   = "signal"
        change_signal = "sigusr1"
      }
    }
  }
}`

// templateAPIJob is the same job as Nomad's CLI sends it: api.Job with
// only what the file sets, nulls elsewhere (no Canonicalize).
func templateAPIJob() *nomad.Job {
	return &nomad.Job{ID: new("j"), TaskGroups: []*nomad.TaskGroup{{Name: new("g"), Tasks: []*nomad.Task{{
		Name: "t", Driver: "raw_exec",
		Templates: []*nomad.Template{
			{EmbeddedTmpl: new("addr={{ range nomadService \"web\" }}{{ .Address }}:{{ .Port }}{{ end }}\n"),
				DestPath: new("local/app.env"), Envvars: new(true), ChangeMode: new("script"),
				ChangeScript: &nomad.ChangeScript{Command: new("/bin/reload"), Args: []string{"-now"},
					Timeout: new(9 * time.Second), FailOnError: new(true)},
				Splay: new(time.Duration(0)), Perms: new("0600"), Uid: new(1000), Gid: new(1001),
				LeftDelim: new("[["), RightDelim: new("]]"), ErrMissingKey: new(true),
				Wait: &nomad.WaitConfig{Min: new(2 * time.Second), Max: new(10 * time.Second)}},
			{SourcePath: new("local/in.tpl"), DestPath: new("secrets/out"), ChangeMode: new("signal")},
			{EmbeddedTmpl: new("x"), DestPath: new("local/x"), ChangeMode: new("signal"), ChangeSignal: new("sigusr1")},
		},
	}}}}}
}

// TestTemplateHCLAndJSONAgree parses the template blocks from HCL and
// from Nomad's API JSON and expects one structs.Job with Nomad's
// defaults for what is left out.
func TestTemplateHCLAndJSONAgree(t *testing.T) {
	fromHCL := mustParse(t, templateHCL, nil)
	buf, err := json.Marshal(map[string]any{"Job": templateAPIJob()})
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Parse("job.json", buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	two, ten := 2*time.Second, 10*time.Second
	uid, gid := 1000, 1001
	want := []*structs.Template{
		{EmbeddedTmpl: "addr={{ range nomadService \"web\" }}{{ .Address }}:{{ .Port }}{{ end }}\n",
			DestPath: "local/app.env", Envvars: true, ChangeMode: "script",
			ChangeScript: &structs.ChangeScript{Command: "/bin/reload", Args: []string{"-now"}, Timeout: 9 * time.Second, FailOnError: true},
			Splay:        0, Perms: "0600", Uid: &uid, Gid: &gid, LeftDelim: "[[", RightDelim: "]]", ErrMissingKey: true,
			Wait: &structs.WaitConfig{Min: &two, Max: &ten}},
		{SourcePath: "local/in.tpl", DestPath: "secrets/out", ChangeMode: "signal", ChangeSignal: "SIGHUP",
			Splay: 5 * time.Second, Perms: "0644", LeftDelim: "{{", RightDelim: "}}"},
		{EmbeddedTmpl: "x", DestPath: "local/x", ChangeMode: "signal", ChangeSignal: "SIGUSR1",
			Splay: 5 * time.Second, Perms: "0644", LeftDelim: "{{", RightDelim: "}}"},
	}
	for name, job := range map[string]*structs.Job{"hcl": fromHCL, "json": fromJSON} {
		if got := job.TaskGroups[0].Tasks[0].Templates; !reflect.DeepEqual(got, want) {
			t.Errorf("%s templates\n got %s\nwant %s", name, mustJSON(t, got), mustJSON(t, want))
		}
	}
	fromHCL.Canonicalize()
	fromJSON.Canonicalize()
	if !reflect.DeepEqual(fromHCL, fromJSON) {
		t.Fatalf("HCL and JSON differ\n hcl %s\njson %s", mustJSON(t, fromHCL), mustJSON(t, fromJSON))
	}
	if err := fromHCL.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTemplateRefusals(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"vault_grace", minimal(`template {
  data = "x"
  destination = "local/x"
  vault_grace = "5s"
}`), `Drover does not support the "vault_grace" argument in a template block`},
		{"once", minimal(`template {
  data = "x"
  destination = "local/x"
  once = true
}`), `Drover does not support the "once" argument in a template block`},
		{"run_on_first_render", minimal(`template {
  data = "x"
  destination = "local/x"
  change_mode = "script"
  change_script {
    command = "x"
    run_on_first_render = true
  }
}`), `Drover does not support the "run_on_first_render" argument in a change_script block`},
		{"typo", minimal(`template {
  data = "x"
  destinaton = "local/x"
}`), `did you mean "destination"?`},
		{"json vault grace", `{"ID": "j", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
		  "Templates": [{"EmbeddedTmpl": "x", "DestPath": "local/x", "VaultGrace": 5000000000}]}]}]}`,
			"Job.TaskGroups[0].Tasks[0].Templates[0].VaultGrace: Drover does not support vault_grace (Vault)"},
		{"json once", `{"ID": "j", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
		  "Templates": [{"EmbeddedTmpl": "x", "DestPath": "local/x", "Once": true}]}]}]}`,
			"Templates[0].Once: Drover does not support templates that render only once (once)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.hcl", []byte(tc.src), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
	// Nomad's CLI sends VaultGrace and Once as null or zero: accepted.
	src := `{"ID": "j", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
	  "Templates": [{"EmbeddedTmpl": "x", "DestPath": "local/x", "VaultGrace": 0, "Once": false,
	    "ChangeScript": {"Command": "c", "RunOnFirstRender": null}}]}]}]}`
	if _, err := Parse("test.json", []byte(src), nil); err != nil {
		t.Fatal(err)
	}
}

// restart { render_templates } reads the same from HCL and JSON.
func TestRestartRenderTemplates(t *testing.T) {
	hcl := mustParse(t, `job "j" {
  group "g" {
    restart {
      render_templates = true
    }
    task "t" {
      driver = "raw_exec"
    }
  }
}`, nil)
	buf, err := json.Marshal(&nomad.Job{ID: new("j"), TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
		RestartPolicy: &nomad.RestartPolicy{RenderTemplates: new(true)},
		Tasks:         []*nomad.Task{{Name: "t", Driver: "raw_exec"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	js, err := Parse("job.json", buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail", RenderTemplates: true}
	for name, job := range map[string]*structs.Job{"hcl": hcl, "json": js} {
		if got := job.TaskGroups[0].RestartPolicy; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}

package agent

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestRegisterRefusesBadTemplates registers, through Nomad's Go client,
// jobs whose template is wrong in a way only the servers can see, and
// expects a 400 naming the template's field.
func TestRegisterRefusesBadTemplates(t *testing.T) {
	_, c := startServerAgent(t)
	cases := []struct {
		name string
		tmpl *nomad.Template
		want string
	}{
		{"does not parse", &nomad.Template{EmbeddedTmpl: new("{{ if }}"), DestPath: new("local/x")},
			"TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl: the template does not parse: template: data:1: missing value for if"},
		{"custom delimiters", &nomad.Template{EmbeddedTmpl: new("[[ env ]"), DestPath: new("local/x"),
			LeftDelim: new("[["), RightDelim: new("]]")},
			"Templates[0].EmbeddedTmpl: the template does not parse"},
		{"consul function", &nomad.Template{EmbeddedTmpl: new(`{{ key "a" }}`), DestPath: new("local/x")},
			`Templates[0].EmbeddedTmpl: Drover does not support the Consul function "key" (there is no Consul)`},
		{"escapes", &nomad.Template{EmbeddedTmpl: new("x"), DestPath: new("../../etc/cron.d/x")},
			`Templates[0].DestPath: destination "../../etc/cron.d/x" escapes the allocation directory`},
		{"no destination", &nomad.Template{EmbeddedTmpl: new("x")}, "Templates[0].DestPath: must be set"},
		{"unknown signal", &nomad.Template{EmbeddedTmpl: new("x"), DestPath: new("local/x"), ChangeMode: new("signal"),
			ChangeSignal: new("SIGWHAT")}, `Templates[0].ChangeSignal: unknown signal "SIGWHAT"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := baseProbeJob("tmpl")
			job.TaskGroups[0].Tasks[0].Templates = []*nomad.Template{tc.tmpl}
			_, _, err := c.Jobs().Register(job, nil)
			var ue nomad.UnexpectedResponseError
			if !errors.As(err, &ue) || ue.StatusCode() != http.StatusBadRequest || !strings.Contains(ue.Body(), tc.want) {
				t.Fatalf("register: %v; want a 400 with %q", err, tc.want)
			}
		})
	}
	// A good one registers and reads back with Nomad's defaults.
	job := baseProbeJob("tmpl-ok")
	job.TaskGroups[0].Tasks[0].Templates = []*nomad.Template{{EmbeddedTmpl: new(`{{ env "NOMAD_TASK_NAME" }}`), DestPath: new("local/x")}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Jobs().Info("tmpl-ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	tm := got.TaskGroups[0].Tasks[0].Templates[0]
	if *tm.ChangeMode != "restart" || *tm.Splay != 5e9 || *tm.Perms != "0644" || *tm.LeftDelim != "{{" || *tm.RightDelim != "}}" {
		t.Fatalf("defaults: %+v", tm)
	}
}

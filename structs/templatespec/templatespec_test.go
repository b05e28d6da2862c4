package templatespec

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name, text, left, right string
		want                    string // "" = accepted
	}{
		{"plain text", "hello", "", "", ""},
		{"env", `{{ env "NOMAD_ALLOC_ID" }}`, "", "", ""},
		{"nomad service", `{{ range nomadService "web" }}{{ .Address }}:{{ .Port }}{{ end }}`, "", "", ""},
		{"nomad var", `{{ with nomadVar "nomad/jobs/app" }}{{ .password }}{{ end }}`, "", "", ""},
		{"sprig", `{{ "a,b" | sprig_splitList "," | sprig_join "-" }}`, "", "", ""},
		{"define and template", `{{ define "x" }}{{ env "A" }}{{ end }}{{ template "x" }}`, "", "", ""},
		{"custom delimiters", `[[ env "A" ]] {{ not a template }}`, "[[", "]]", ""},
		{"unclosed action", `{{ env "A" `, "", "", `unclosed action`},
		{"unknown function", `{{ nosuch "A" }}`, "", "", `function "nosuch" not defined`},
		{"wrong delimiters", `[[ if ]]`, "[[", "]]", `missing value for if`},
		{"consul key", `{{ key "app/config" }}`, "", "", `Drover does not support the Consul function "key" (there is no Consul)`},
		{"consul service in a branch", `{{ if true }}{{ else }}{{ range service "db" }}{{ end }}{{ end }}`, "", "", `Consul function "service"`},
		{"consul in a define", `{{ define "x" }}{{ tree "a" }}{{ end }}`, "", "", `Consul function "tree"`},
		{"vault secret", `{{ with secret "kv/x" }}{{ end }}`, "", "", `Drover does not support the Vault function "secret"`},
		{"plugin", `{{ plugin "/bin/sh" }}`, "", "", `the function "plugin" is disabled`},
		{"writeToFile in a pipeline", `{{ "x" | writeToFile "/tmp/x" "" "" "0644" }}`, "", "", `"writeToFile" is disabled`},
		{"a field named key is fine", `{{ with nomadVar "a" }}{{ .key }}{{ end }}`, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.text, tc.left, tc.right)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	job := &structs.Job{TaskGroups: []*structs.TaskGroup{nil, {Tasks: []*structs.Task{nil, {Templates: []*structs.Template{
		nil,
		{EmbeddedTmpl: "ok", LeftDelim: "{{", RightDelim: "}}"},
		{EmbeddedTmpl: "{{ if }}", LeftDelim: "{{", RightDelim: "}}"},
		{EmbeddedTmpl: `{{ key "x" }}`, LeftDelim: "{{", RightDelim: "}}"},
		{SourcePath: "local/in.tpl"},
		{EmbeddedTmpl: "x", LeftDelim: "{{", RightDelim: "}}", ChangeMode: "signal", ChangeSignal: "SIGNOPE"},
		{EmbeddedTmpl: "x", LeftDelim: "{{", RightDelim: "}}", ChangeMode: "signal", ChangeSignal: "SIGUSR2"},
	}}}}}}
	errs := Validate(job)
	if len(errs) != 3 {
		t.Fatalf("errors = %v", errs)
	}
	if errs[0].Field != "TaskGroups[1].Tasks[1].Templates[2].EmbeddedTmpl" ||
		!strings.HasPrefix(errs[0].Message, "the template does not parse: template: data:1: missing value for if") {
		t.Fatalf("parse error = %+v", errs[0])
	}
	if errs[1].Field != "TaskGroups[1].Tasks[1].Templates[3].EmbeddedTmpl" ||
		errs[1].Message != `Drover does not support the Consul function "key" (there is no Consul)` {
		t.Fatalf("function error = %+v", errs[1])
	}
	if errs[2].Field != "TaskGroups[1].Tasks[1].Templates[5].ChangeSignal" || errs[2].Message != `unknown signal "SIGNOPE"` {
		t.Fatalf("signal error = %+v", errs[2])
	}
}

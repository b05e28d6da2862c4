package structs

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func templateJob(edit func(t *Template)) *Job {
	j := specJob()
	tmpl := &Template{EmbeddedTmpl: "{{ env \"NOMAD_TASK_NAME\" }}", DestPath: "local/out.txt"}
	if edit != nil {
		edit(tmpl)
	}
	j.TaskGroups[0].Tasks[0].Templates = []*Template{tmpl}
	j.Canonicalize()
	return j
}

func TestTemplateCanonicalize(t *testing.T) {
	j := templateJob(func(t *Template) {
		t.ChangeMode = TemplateChangeModeSignal
		t.ChangeScript = &ChangeScript{Command: "x"}
	})
	got := j.TaskGroups[0].Tasks[0].Templates[0]
	want := &Template{EmbeddedTmpl: "{{ env \"NOMAD_TASK_NAME\" }}", DestPath: "local/out.txt",
		ChangeMode: "signal", ChangeSignal: "SIGHUP", Perms: "0644", LeftDelim: "{{", RightDelim: "}}",
		ChangeScript: &ChangeScript{Command: "x", Timeout: 5 * time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("canonicalized template\n got %+v\nwant %+v", got, want)
	}
	// A splay of 0 is meaningful (apply at once) and stays.
	if got.Splay != 0 {
		t.Fatalf("splay = %s", got.Splay)
	}
	if j.Validate() != nil {
		t.Fatal(j.Validate())
	}
}

func TestTemplateValidate(t *testing.T) {
	neg := -time.Second
	one, two := time.Second, 2*time.Second
	cases := []struct {
		name string
		edit func(t *Template)
		want string // "" = valid; else "Field: part of the message"
	}{
		{"defaults", nil, ""},
		{"into the alloc dir", func(t *Template) { t.DestPath = "../alloc/shared.txt" }, ""},
		{"absolute", func(t *Template) { t.DestPath = "/etc/app.conf" }, ""},
		{"interpolated", func(t *Template) { t.DestPath = "${NOMAD_SECRETS_DIR}/token" }, ""},
		{"signal", func(t *Template) { t.ChangeMode = "signal"; t.ChangeSignal = "SIGUSR1" }, ""},
		{"script", func(t *Template) { t.ChangeMode = "script"; t.ChangeScript = &ChangeScript{Command: "/bin/true"} }, ""},
		{"wait", func(t *Template) { t.Wait = &WaitConfig{Min: &one, Max: &two} }, ""},
		{"no destination", func(t *Template) { t.DestPath = "" }, "Templates[0].DestPath: must be set"},
		{"escapes", func(t *Template) { t.DestPath = "../../../etc/passwd" }, "Templates[0].DestPath: destination \"../../../etc/passwd\" escapes the allocation directory"},
		{"escapes to the alloc dir's parent", func(t *Template) { t.DestPath = "local/../../.." }, "Templates[0].DestPath: destination \"local/../../..\" escapes"},
		{"source escapes", func(t *Template) { t.EmbeddedTmpl = ""; t.SourcePath = "../../x" }, "Templates[0].SourcePath: source \"../../x\" escapes"},
		{"neither source nor data", func(t *Template) { t.EmbeddedTmpl = "" }, "Templates[0]: must set either source or data"},
		{"source and data", func(t *Template) { t.SourcePath = "local/in.tpl" }, "Templates[0].SourcePath: source and data are exclusive"},
		{"bad change mode", func(t *Template) { t.ChangeMode = "reload" }, "Templates[0].ChangeMode: must be one of noop, restart, signal, script"},
		{"script without change_script", func(t *Template) { t.ChangeMode = "script" }, "Templates[0].ChangeScript: must be set when change_mode is \"script\""},
		{"script without command", func(t *Template) { t.ChangeMode = "script"; t.ChangeScript = &ChangeScript{} }, "Templates[0].ChangeScript.Command: must be set"},
		{"signal and env", func(t *Template) { t.ChangeMode = "signal"; t.Envvars = true }, "Templates[0].ChangeMode: an env template cannot use change_mode \"signal\""},
		{"negative splay", func(t *Template) { t.Splay = -1 }, "Templates[0].Splay: must not be negative"},
		{"perms", func(t *Template) { t.Perms = "rw-r--r--" }, "Templates[0].Perms: \"rw-r--r--\" is not an octal file mode"},
		{"perms too wide", func(t *Template) { t.Perms = "17777" }, "Templates[0].Perms"},
		{"negative uid", func(t *Template) { u := -1; t.Uid = &u }, "Templates[0].Uid: must not be negative"},
		{"wait max below min", func(t *Template) { t.Wait = &WaitConfig{Min: &two, Max: &one} }, "Templates[0].Wait.Max: must not be less than min"},
		{"wait negative", func(t *Template) { t.Wait = &WaitConfig{Min: &neg} }, "Templates[0].Wait.Min: must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := templateJob(tc.edit).Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "TaskGroups[0].Tasks[0]."+tc.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tc.want)
			}
		})
	}
	j := templateJob(nil)
	j.TaskGroups[0].Tasks[0].Templates = append(j.TaskGroups[0].Tasks[0].Templates, nil)
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "Templates[1]: must not be null") {
		t.Fatalf("null template: %v", err)
	}
}

func TestTemplateCopyIsDeep(t *testing.T) {
	one := time.Second
	uid := 7
	orig := &Template{DestPath: "local/x", Uid: &uid, Wait: &WaitConfig{Min: &one},
		ChangeScript: &ChangeScript{Command: "c", Args: []string{"a"}}}
	c := orig.Copy()
	*c.Uid, *c.Wait.Min, c.ChangeScript.Args[0] = 9, time.Hour, "b"
	if *orig.Uid != 7 || *orig.Wait.Min != time.Second || orig.ChangeScript.Args[0] != "a" {
		t.Fatalf("copy shares memory with the original: %+v", orig)
	}
}

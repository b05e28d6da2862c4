package template

import (
	"testing"

	cttemplate "github.com/hashicorp/consul-template/template"

	"github.com/drover-project/drover/structs/templatespec"
)

// TestRegistrationKnowsConsulTemplatesFunctions checks that every function
// name the servers accept at registration (structs/templatespec) is one
// consul-template has, so a template the servers let through does not
// fail to parse here.
func TestRegistrationKnowsConsulTemplatesFunctions(t *testing.T) {
	names := append([]string{"sprig_splitList", "sprig_trim", "sprig_default"}, templatespec.Functions...)
	names = append(names, templatespec.ConsulFunctions...)
	names = append(names, templatespec.VaultFunctions...)
	names = append(names, templatespec.DeniedFunctions...)
	for _, n := range names {
		tm, err := cttemplate.NewTemplate(&cttemplate.NewTemplateInput{Contents: "{{ if false }}{{ " + n + " }}{{ end }}",
			LeftDelim: "{{", RightDelim: "}}"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.Execute(&cttemplate.ExecuteInput{Brain: cttemplate.NewBrain()}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := templatespec.Check(`{{ nosuch }}`, "", ""); err == nil {
		t.Fatal("an unknown function passed the registration check")
	}
}

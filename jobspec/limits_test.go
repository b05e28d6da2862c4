package jobspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Deep nesting in a job file, a variable file or a -var value is refused
// before hcl parses it (internal/hcllimit), with its position.
func TestRefusesDeepNesting(t *testing.T) {
	job := "variable \"v\" {\n  type = list(any)\n}\njob \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
	deep := strings.Repeat("[", 75000) + strings.Repeat("]", 75000)

	_, err := Parse("job.hcl", []byte("job \"j\" {\n  meta = "+deep+"\n}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "job.hcl:2:") || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("job file: %v", err)
	}

	varFile := filepath.Join(t.TempDir(), "vars.hcl")
	if err := os.WriteFile(varFile, []byte("v = "+deep+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Parse("job.hcl", []byte(job), &Options{VarFiles: []string{varFile}})
	if err == nil || !strings.Contains(err.Error(), "vars.hcl:1:") || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("var file: %v", err)
	}

	_, err = Parse("job.hcl", []byte(job), &Options{Vars: map[string]string{"v": deep}})
	if err == nil || !strings.Contains(err.Error(), "nest more than 64") {
		t.Fatalf("-var: %v", err)
	}
}

// A deep JSON job is refused by encoding/json's own nesting limit
// (10,000), before anything walks it.
func TestRefusesDeepJSON(t *testing.T) {
	src := `{"Job": {"Meta": ` + strings.Repeat("[", 500000) + strings.Repeat("]", 500000) + `}}`
	if _, err := Parse("job.json", []byte(src), nil); err == nil {
		t.Fatal("accepted")
	}
}

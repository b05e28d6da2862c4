package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

// deepJobHCL is the job from issue 16 that overflowed the stack: about
// 150 KB, nested 75,000 deep.
func deepJobHCL() string {
	return "job \"deep\" {\n  meta {\n    a = " + strings.Repeat("[", 75000) + strings.Repeat("]", 75000) + "\n  }\n}\n"
}

func TestHTTPJobsParseRefusesDeepNesting(t *testing.T) {
	for name, src := range map[string]string{
		"brackets":  deepJobHCL(),
		"operators": "job \"deep\" {\n  meta {\n    a = " + strings.Repeat("!", 150000) + "true\n  }\n}\n",
		"blocks":    strings.Repeat("job {\n", 75000) + strings.Repeat("}\n", 75000),
	} {
		t.Run(name, func(t *testing.T) {
			body, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: src})
			rec := do(t, testHandler(newFake()), "PUT", "/v1/jobs/parse", string(body))
			if rec.Code != 400 || !strings.Contains(rec.Body.String(), "job.hcl:") {
				t.Fatalf("status %d: %.300s", rec.Code, rec.Body)
			}
		})
	}
}

// TestAgentSurvivesDeepJob sends the deep job to a real agent and checks
// it answers 400 and keeps serving.
func TestAgentSurvivesDeepJob(t *testing.T) {
	a := startDevAgent(t)
	body, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: deepJobHCL()})
	req, _ := http.NewRequest("PUT", a.HTTPURL()+"/v1/jobs/parse", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(msg), "Nesting too deep") {
		t.Fatalf("status %d: %.300s", resp.StatusCode, msg)
	}
	resp, err = http.Get(a.HTTPURL() + "/v1/status/leader")
	if err != nil {
		t.Fatalf("agent gone after the deep job: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("leader status %d", resp.StatusCode)
	}
}

func TestConfigRefusesDeepNesting(t *testing.T) {
	c := DefaultConfig()
	src := "client {\n  meta {\n    a = " + strings.Repeat("(", 75000) + "\"x\"" + strings.Repeat(")", 75000) + "\n  }\n}\n"
	err := parseConfig(c, "agent.hcl", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "agent.hcl:3:") || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("err = %v", err)
	}
	js := `{"client": ` + strings.Repeat("[", 75000) + strings.Repeat("]", 75000) + `}`
	if err := parseConfig(c, "agent.json", []byte(js)); err == nil || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("json err = %v", err)
	}
}

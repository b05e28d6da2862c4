package agent

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-project/drover/api"
)

// BenchmarkHTTPJobRegister measures one job registration through the HTTP
// API of a single-server dev agent: HTTP, JSON decode, RPC, Raft apply
// (with fsync) and the response.
func BenchmarkHTTPJobRegister(b *testing.B) {
	a := startDevAgent(b)
	c := api.NewClient(a.HTTPURL())
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := c.RegisterJob(ctx, testJob("job-"+strconv.Itoa(i)), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPJobGet measures reading one job through the HTTP API.
func BenchmarkHTTPJobGet(b *testing.B) {
	a := startDevAgent(b)
	c := api.NewClient(a.HTTPURL())
	ctx := context.Background()
	if _, _, err := c.RegisterJob(ctx, testJob("web"), nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Job(ctx, "web", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPRegisterDecode measures the handler alone (fake server) on
// the body Nomad's client sends for a canonicalized job.
func BenchmarkHTTPRegisterDecode(b *testing.B) {
	body, err := json.Marshal(map[string]any{"Job": nomadJob("web")})
	if err != nil {
		b.Fatal(err)
	}
	h := testHandler(newFake().on("Job.Register", okRegister))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("PUT", "/v1/jobs", strings.NewReader(string(body))))
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

package agent

import (
	"net/http"
	"testing"

	"github.com/drover-project/drover/structs"
)

// Typed errors map to HTTP statuses by code; a write of unknown outcome
// is a 504 that keeps its explanation, and no leader is Nomad's 500 text.
func TestErrorResponseCodes(t *testing.T) {
	tests := []struct {
		err  error
		code int
		body string
	}{
		{structs.NewError(structs.ErrCodeOutcomeUnknown, "Job.Register was sent to the leader; read it back"), http.StatusGatewayTimeout,
			"Job.Register was sent to the leader; read it back"},
		{structs.NewError(structs.ErrCodeNoLeader, "No cluster leader: the last forward failed"), http.StatusInternalServerError, "No cluster leader"},
		{structs.NewError(structs.ErrCodeConflict, "enforcing job modify index 3"), http.StatusConflict, "enforcing job modify index 3"},
		{&structs.ValidationError{Errors: []structs.FieldError{{Field: "TaskGroups[0].Disconnect.Reconcile", Message: "bad"}}},
			http.StatusBadRequest, "TaskGroups[0].Disconnect.Reconcile: bad"},
	}
	for _, tc := range tests {
		code, body := errorResponse(tc.err)
		if code != tc.code || body != tc.body {
			t.Errorf("errorResponse(%v) = %d %q, want %d %q", tc.err, code, body, tc.code, tc.body)
		}
	}
}

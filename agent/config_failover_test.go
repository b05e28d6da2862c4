package agent

import (
	"strings"
	"testing"
	"time"
)

// failover_heartbeat_ttl (Nomad's name, in the server block) reaches the
// server's FailoverHeartbeatTTL; a bad value is refused naming it.
func TestParseFailoverHeartbeatTTL(t *testing.T) {
	c := DefaultConfig()
	if err := parseConfig(c, "s.hcl", []byte("server {\n  failover_heartbeat_ttl = \"90s\"\n}\n")); err != nil {
		t.Fatal(err)
	}
	if c.Server.FailoverHeartbeatTTL != 90*time.Second {
		t.Fatalf("FailoverHeartbeatTTL = %v, want 90s", c.Server.FailoverHeartbeatTTL)
	}
	c = DefaultConfig()
	if err := parseConfig(c, "s.json", []byte(`{"server": {"failover_heartbeat_ttl": "2m"}}`)); err != nil {
		t.Fatal(err)
	}
	if c.Server.FailoverHeartbeatTTL != 2*time.Minute {
		t.Fatalf("json: FailoverHeartbeatTTL = %v, want 2m", c.Server.FailoverHeartbeatTTL)
	}
	err := parseConfig(DefaultConfig(), "e.hcl", []byte("server {\n  failover_heartbeat_ttl = \"0s\"\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "failover_heartbeat_ttl") {
		t.Fatalf("zero failover_heartbeat_ttl: %v, want an error naming it", err)
	}
}

package agent

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// tlsBlock is an agent's tls block for a certificate of role.
func tlsBlock(t *testing.T, ca *tlstest.CA, role tlsutil.Role, name string) tlsutil.Config {
	certFile, keyFile := ca.Cert(t, role, "global", name)
	return tlsutil.Config{EnableHTTP: true, EnableRPC: true, CAFile: ca.CAFile, CertFile: certFile, KeyFile: keyFile,
		VerifyServerHostname: true, VerifyHTTPSClient: true}
}

// A server agent and a client-only agent with TLS on RPC and HTTP: the
// client registers over TLS with its client certificate, the HTTP API is
// HTTPS and wants a client certificate, and the CLI's TLS settings (the
// api package's) reach it.
func TestAgentsWithTLS(t *testing.T) {
	ca := tlstest.NewCA(t)
	scfg := DevConfig()
	scfg.Client.Enabled = false
	scfg.Ports = Ports{}
	scfg.TLS = tlsBlock(t, ca, tlsutil.RoleServer, "server")
	scfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	sa, err := NewAgent(scfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Shutdown() })
	if !strings.HasPrefix(sa.HTTPURL(), "https://") {
		t.Fatalf("HTTP URL %s, want https", sa.HTTPURL())
	}

	ccfg := DefaultConfig()
	ccfg.Client.Enabled = true
	ccfg.Client.Servers = []string{sa.RPCAddr()}
	ccfg.DataDir = t.TempDir()
	ccfg.BindAddr = "127.0.0.1"
	ccfg.NodeName = "tls-client"
	ccfg.Ports = Ports{}
	ccfg.TLS = tlsBlock(t, ca, tlsutil.RoleClient, "client")
	ccfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.DestroyOnShutdown = true
	}
	ca2, err := NewAgent(ccfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ca2.Shutdown() })
	srv := sa.Server()
	pollUntil(t, "the TLS client's node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: ca2.Client().NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady && resp.Node.TLSEnabled
	})

	ctx := context.Background()
	cliCert, cliKey := ca.Cert(t, tlsutil.RoleCLI, "global", "cli")
	for _, tc := range []struct {
		name string
		tls  api.TLSConfig
		ok   bool
	}{
		{"CA and cli certificate", api.TLSConfig{CACert: ca.CAFile, ClientCert: cliCert, ClientKey: cliKey}, true},
		{"no client certificate", api.TLSConfig{CACert: ca.CAFile}, false},
		{"no CA", api.TLSConfig{ClientCert: cliCert, ClientKey: cliKey}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc, err := tc.tls.HTTPClient()
			if err != nil {
				t.Fatal(err)
			}
			c := api.NewClient(sa.HTTPURL())
			c.HTTPClient = hc
			_, _, err = c.Nodes(ctx, nil)
			if tc.ok != (err == nil) {
				t.Fatalf("listing nodes: %v (want success: %v)", err, tc.ok)
			}
		})
	}
	// Plain HTTP to the HTTPS port is refused.
	resp, err := http.Get(strings.Replace(sa.HTTPURL(), "https://", "http://", 1) + "/v1/nodes")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the HTTPS API: %d", resp.StatusCode)
		}
	}
}

// The tls block is read with Nomad's names; relative files are resolved
// against the working directory; http or rpc without the files is an
// error, and an unsupported setting names itself.
func TestTLSConfigBlock(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.hcl")
	if err := os.WriteFile(file, []byte(`tls {
  http = true
  rpc  = true
  ca_file   = "ca.pem"
  cert_file = "cert.pem"
  key_file  = "key.pem"
  verify_server_hostname = true
  verify_https_client    = true
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := LoadConfigFile(cfg, file); err != nil {
		t.Fatal(err)
	}
	if err := cfg.ResolvePaths("/work/x"); err != nil {
		t.Fatal(err)
	}
	want := tlsutil.Config{EnableHTTP: true, EnableRPC: true, CAFile: "/work/x/ca.pem", CertFile: "/work/x/cert.pem",
		KeyFile: "/work/x/key.pem", VerifyServerHostname: true, VerifyHTTPSClient: true}
	if cfg.TLS != want {
		t.Fatalf("tls = %+v, want %+v", cfg.TLS, want)
	}

	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("tls {\n  tls_min_version = \"tls13\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := LoadConfigFile(DefaultConfig(), bad); err == nil || !strings.Contains(err.Error(), "tls_min_version") {
		t.Fatalf("tls_min_version: %v, want an error naming it", err)
	}
	upgrade := filepath.Join(dir, "upgrade.hcl")
	if err := os.WriteFile(upgrade, []byte("tls {\n  rpc_upgrade_mode = true\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ucfg := DefaultConfig()
	if err := LoadConfigFile(ucfg, upgrade); err != nil || !ucfg.TLS.RPCUpgradeMode {
		t.Fatalf("rpc_upgrade_mode: %v, %+v", err, ucfg.TLS)
	}

	missing := DevConfig()
	missing.TLS = tlsutil.Config{EnableRPC: true}
	if err := missing.Validate(); err == nil || !strings.Contains(err.Error(), "ca_file") {
		t.Fatalf("rpc without files: %v, want an error naming ca_file", err)
	}
}

package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
)

// servedSerial dials addr with TLS (no verification) and returns the
// serial of the certificate served.
func servedSerial(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// On SIGHUP the agent reads its configuration again and serves the
// certificate now in its files; a reload that fails (a broken file)
// keeps the one in use, says so, and the agent goes on.
func TestAgentReloadsCertificatesOnHangup(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "agent.pem"), filepath.Join(dir, "agent-key.pem")
	install := func(name string) {
		c, k := ca.Cert(t, tlsutil.RoleServer, "global", name)
		for src, dst := range map[string]string{c: certFile, k: keyFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install("first")
	conf := filepath.Join(dir, "tls.hcl")
	if err := os.WriteFile(conf, []byte(`tls {
  http      = true
  ca_file   = "`+ca.CAFile+`"
  cert_file = "`+certFile+`"
  key_file  = "`+keyFile+`"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	e, out, errOut := testEnv(nil)
	sig := make(chan os.Signal, 2)
	hup := make(chan os.Signal, 1)
	e.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	e.hangups = func() (<-chan os.Signal, func()) { return hup, func() {} }
	started := make(chan *agent.Agent, 1)
	e.agentStarted = func(a *agent.Agent) { started <- a }
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"agent", "-dev", "-config", conf, "-http-port", "0", "-rpc-port", "0", "-log-level", "warn"}, e)
	}()
	var a *agent.Agent
	select {
	case a = <-started:
	case code := <-done:
		t.Fatalf("agent exited with %d: %s", code, errOut)
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not start")
	}
	before := servedSerial(t, a.HTTPAddr())

	waitOutput := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String()+errOut.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the output:\n%s\n%s", what, out, errOut)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	install("second")
	hup <- syscall.SIGHUP
	waitOutput("Reloaded the TLS certificates")
	after := servedSerial(t, a.HTTPAddr())
	if after == before {
		t.Fatal("the agent serves the old certificate after SIGHUP")
	}

	// A broken key file: the reload fails and the certificate in use stays.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- syscall.SIGHUP
	waitOutput("Reload failed")
	if got := servedSerial(t, a.HTTPAddr()); got != after {
		t.Fatal("a failed reload changed the certificate served")
	}

	sig <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("agent exit %d: %s", code, errOut)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not stop")
	}
}

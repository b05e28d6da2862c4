package tlsutil_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
)

// A peer's role is read from its certificate's DNS names, for the
// configurator's region only.
func TestPeerRole(t *testing.T) {
	ca := tlstest.NewCA(t)
	c := ca.Config(t, tlsutil.RoleServer, "global", nil)
	for _, tc := range []struct {
		role   tlsutil.Role
		region string
		want   tlsutil.Role
	}{
		{tlsutil.RoleServer, "global", tlsutil.RoleServer},
		{tlsutil.RoleClient, "global", tlsutil.RoleClient},
		{tlsutil.RoleCLI, "global", tlsutil.RoleCLI},
		{tlsutil.RoleServer, "eu", tlsutil.RoleNone},
	} {
		certFile, _ := ca.Cert(t, tc.role, tc.region, tc.region+"-"+tc.role.String())
		cert := parse(t, certFile)
		if got := c.PeerRole(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); got != tc.want {
			t.Errorf("%s.%s: role %s, want %s", tc.role, tc.region, got, tc.want)
		}
	}
	if got := c.PeerRole(tls.ConnectionState{}); got != tlsutil.RoleNone {
		t.Errorf("no certificate: role %s", got)
	}
}

func TestNamesAndFiles(t *testing.T) {
	if got := tlsutil.Name(tlsutil.RoleServer, "global"); got != "server.global.drover" {
		t.Errorf("Name = %q", got)
	}
	cert, key := tlsutil.CertFiles(tlsutil.RoleClient, "eu")
	if cert != "eu-client-drover.pem" || key != "eu-client-drover-key.pem" {
		t.Errorf("CertFiles = %q, %q", cert, key)
	}
	if _, _, err := tlsutil.GenerateCert(tlsutil.CertRequest{Role: tlsutil.RoleNone, ValidFor: time.Hour}, nil, nil); err == nil {
		t.Error("a certificate without a role was made")
	}
	if c, err := tlsutil.New(tlsutil.Config{}, "global"); c != nil || err != nil {
		t.Errorf("TLS off: %v, %v; want nil, nil", c, err)
	}
	if _, err := tlsutil.New(tlsutil.Config{EnableRPC: true}, "global"); err == nil {
		t.Error("rpc without files: no error")
	}
}

func parse(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	buf := readFile(t, path)
	b, _ := pem.Decode(buf)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

// handshake runs one TLS handshake between a server using srv's
// IncomingRPC and a client using cli's OutgoingRPC, and returns the
// serial of the certificate the server presented.
func handshake(t *testing.T, srv, cli *tlsutil.Configurator) (string, error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv.IncomingRPC())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.(*tls.Conn).Handshake()
		c.Close()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cli.OutgoingRPC())
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// Reload swaps the certificate and the CA for new connections: a server
// presents its new certificate at once, and after a move to another CA,
// peers of the old CA are refused both ways while peers of the new one
// connect. A reload that would turn TLS off, or with a missing file,
// is refused and leaves the certificates in use.
func TestReload(t *testing.T) {
	ca := tlstest.NewCA(t)
	cert1, key1 := ca.Cert(t, tlsutil.RoleServer, "global", "s1")
	cfg := tlsutil.Config{EnableRPC: true, CAFile: ca.CAFile, CertFile: cert1, KeyFile: key1, VerifyServerHostname: true}
	srv, err := tlsutil.New(cfg, "global")
	if err != nil {
		t.Fatal(err)
	}
	cli := ca.Config(t, tlsutil.RoleClient, "global", nil)
	first, err := handshake(t, srv, cli)
	if err != nil {
		t.Fatal(err)
	}
	if first != parse(t, cert1).SerialNumber.String() {
		t.Fatal("the server did not present its certificate")
	}

	// A new certificate of the same CA.
	cert2, key2 := ca.Cert(t, tlsutil.RoleServer, "global", "s2")
	cfg.CertFile, cfg.KeyFile = cert2, key2
	if err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	second, err := handshake(t, srv, cli)
	if err != nil {
		t.Fatal(err)
	}
	if second != parse(t, cert2).SerialNumber.String() {
		t.Fatalf("after the reload the server presented %s, want the new certificate", second)
	}

	// Refused reloads leave everything as it was.
	bad := cfg
	bad.EnableRPC = false
	bad.EnableHTTP = true
	if err := srv.Reload(bad); err == nil {
		t.Fatal("a reload switching RPC TLS off was accepted")
	}
	bad = cfg
	bad.CertFile = cfg.CertFile + ".missing"
	if err := srv.Reload(bad); err == nil {
		t.Fatal("a reload with a missing certificate file was accepted")
	}
	if got, err := handshake(t, srv, cli); err != nil || got != second {
		t.Fatalf("after refused reloads: %s, %v", got, err)
	}

	// Another CA: old-CA clients are refused, new-CA clients connect, and
	// the reloaded side refuses a server of the old CA too.
	ca2 := tlstest.NewCA(t)
	cert3, key3 := ca2.Cert(t, tlsutil.RoleServer, "global", "s3")
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = ca2.CAFile, cert3, key3
	if err := srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, srv, cli); err == nil {
		t.Fatal("a client of the old CA connected after the move to the new CA")
	}
	cli2 := ca2.Config(t, tlsutil.RoleClient, "global", nil)
	if _, err := handshake(t, srv, cli2); err != nil {
		t.Fatalf("a client of the new CA: %v", err)
	}
	oldSrv := ca.Config(t, tlsutil.RoleServer, "global", nil)
	if _, err := handshake(t, oldSrv, srv); err == nil {
		t.Fatal("the reloaded agent accepted a server of the old CA")
	}
}

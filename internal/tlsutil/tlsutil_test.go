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

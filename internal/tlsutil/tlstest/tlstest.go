// Package tlstest makes a throwaway CA and agent certificates for tests.
package tlstest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
)

// CA is a CA written to a temporary directory.
type CA struct {
	Dir           string
	CAFile, CAKey string
	caPEM, keyPEM []byte
}

// NewCA makes a CA in a new temporary directory of t.
func NewCA(t testing.TB) *CA {
	t.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCA(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &CA{Dir: dir, CAFile: filepath.Join(dir, tlsutil.CAFile), CAKey: filepath.Join(dir, tlsutil.CAKeyFile),
		caPEM: certPEM, keyPEM: keyPEM}
	write(t, ca.CAFile, certPEM)
	write(t, ca.CAKey, keyPEM)
	return ca
}

// Cert writes a certificate for role in region (under a name of its own,
// so several may exist) and returns its files.
func (ca *CA) Cert(t testing.TB, role tlsutil.Role, region, name string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCert(tlsutil.CertRequest{Role: role, Region: region, ValidFor: time.Hour}, ca.caPEM, ca.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.Dir, name+".pem"), filepath.Join(ca.Dir, name+"-key.pem")
	write(t, certFile, certPEM)
	write(t, keyFile, keyPEM)
	return certFile, keyFile
}

// Config returns the loaded TLS of an agent with a certificate for role
// in region: rpc and http on, verify_server_hostname on (mod may change
// any of it).
func (ca *CA) Config(t testing.TB, role tlsutil.Role, region string, mod func(*tlsutil.Config)) *tlsutil.Configurator {
	t.Helper()
	certFile, keyFile := ca.Cert(t, role, region, region+"-"+role.String()+"-"+time.Now().Format("150405.000000000"))
	cfg := tlsutil.Config{EnableRPC: true, EnableHTTP: true, CAFile: ca.CAFile, CertFile: certFile, KeyFile: keyFile,
		VerifyServerHostname: true}
	if mod != nil {
		mod(&cfg)
	}
	c, err := tlsutil.New(cfg, region)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

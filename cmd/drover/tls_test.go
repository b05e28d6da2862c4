package main

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
)

// tls ca create and tls cert create write Nomad's files (drover for
// nomad) in the current directory; a certificate carries its role's name,
// localhost, 127.0.0.1 and the extra names, is signed by the CA, and an
// existing file is never overwritten.
func TestTLSCreate(t *testing.T) {
	t.Chdir(t.TempDir())
	e, _, errOut := testEnv(nil)
	for _, args := range [][]string{
		{"tls", "ca", "create"},
		{"tls", "cert", "create", "-server", "-additional-dnsname", "s1.example", "-additional-ipaddress", "10.0.0.1"},
		{"tls", "cert", "create", "-client", "-region", "eu"},
		{"tls", "cert", "create", "-cli"},
	} {
		if code := run(args, e); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	ca := readCert(t, "drover-agent-ca.pem")
	if !ca.IsCA {
		t.Fatal("drover-agent-ca.pem is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, tc := range []struct {
		file  string
		names []string
		ip    string
	}{
		{"global-server-drover.pem", []string{"server.global.drover", "localhost", "s1.example"}, "10.0.0.1"},
		{"eu-client-drover.pem", []string{"client.eu.drover", "localhost"}, "127.0.0.1"},
		{"global-cli-drover.pem", []string{"cli.global.drover", "localhost"}, "127.0.0.1"},
	} {
		c := readCert(t, tc.file)
		for _, n := range tc.names {
			if !slices.Contains(c.DNSNames, n) {
				t.Errorf("%s: DNS names %v lack %s", tc.file, c.DNSNames, n)
			}
		}
		if !slices.ContainsFunc(c.IPAddresses, func(ip net.IP) bool { return ip.String() == tc.ip }) {
			t.Errorf("%s: IPs %v lack %s", tc.file, c.IPAddresses, tc.ip)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: %v", tc.file, err)
		}
		key := strings.TrimSuffix(tc.file, ".pem") + "-key.pem"
		if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", key, err, st)
		}
	}

	e, _, errOut = testEnv(nil)
	if code := run([]string{"tls", "cert", "create", "-server"}, e); code != 1 || !strings.Contains(errOut.String(), "already exists") {
		t.Fatalf("second -server: exit %d, %q", code, errOut)
	}
	e, _, errOut = testEnv(nil)
	if code := run([]string{"tls", "cert", "create"}, e); code != 1 || !strings.Contains(errOut.String(), "-server, -client and -cli") {
		t.Fatalf("no role: exit %d, %q", code, errOut)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(buf)
	if b == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

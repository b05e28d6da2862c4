package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
)

// The tls verbs: a local CA and agent certificates, with Nomad's flags
// and its file names (drover in place of nomad), written to the current
// directory.

func tlsCommands() []*command {
	return []*command{
		{name: "tls ca create", synopsis: "Create a certificate authority for agent certificates", run: runTLSCACreate},
		{name: "tls cert create", synopsis: "Create a server, client or cli certificate signed by the CA", run: runTLSCertCreate},
	}
}

const day = 24 * time.Hour

func runTLSCACreate(e *env, args []string) int {
	fs := newFlagSet(e, "tls ca create", "[options]",
		"Create a self-signed certificate authority (ECDSA P-256) to sign agent certificates,\n"+
			"written to "+tlsutil.CAFile+" and "+tlsutil.CAKeyFile+" in the current directory.")
	days := fs.Int("days", 1825, "days the CA is valid for")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if *days <= 0 {
		return usagef(e, "-days must be positive; got %d", *days)
	}
	certPEM, keyPEM, err := tlsutil.GenerateCA(time.Duration(*days) * day)
	if err != nil {
		return errorf(e, "creating the CA: %v", err)
	}
	if err := writeNew(tlsutil.CAFile, certPEM, 0o644); err != nil {
		return errorf(e, "%v", err)
	}
	fmt.Fprintf(e.stdout, "==> CA certificate saved to: %s\n", tlsutil.CAFile)
	if err := writeNew(tlsutil.CAKeyFile, keyPEM, 0o600); err != nil {
		return errorf(e, "%v", err)
	}
	fmt.Fprintf(e.stdout, "==> CA certificate key saved to: %s\n", tlsutil.CAKeyFile)
	return 0
}

func runTLSCertCreate(e *env, args []string) int {
	fs := newFlagSet(e, "tls cert create", "-server|-client|-cli [options]",
		"Create a certificate signed by the CA, for a server (server.<region>.drover), a client\n"+
			"(client.<region>.drover) or the CLI (cli.<region>.drover). Every certificate also names\n"+
			"localhost and 127.0.0.1. Files: <region>-<role>-drover.pem and <region>-<role>-drover-key.pem.")
	isServer := fs.Bool("server", false, "a server certificate: grants authority to be a server and read all state")
	isClient := fs.Bool("client", false, "a client certificate")
	isCLI := fs.Bool("cli", false, "a certificate for the CLI")
	region := fs.String("region", "global", "the region the certificate is for")
	days := fs.Int("days", 365, "days the certificate is valid for")
	caFile := fs.String("ca", tlsutil.CAFile, "the CA certificate")
	keyFile := fs.String("key", tlsutil.CAKeyFile, "the CA key")
	var dnsNames, ips listFlags
	fs.Var(&dnsNames, "additional-dnsname", "another DNS name for the certificate; repeatable")
	fs.Var(&ips, "additional-ipaddress", "another IP address for the certificate; repeatable")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	var role tlsutil.Role
	n := 0
	for _, r := range []struct {
		set  bool
		role tlsutil.Role
	}{{*isServer, tlsutil.RoleServer}, {*isClient, tlsutil.RoleClient}, {*isCLI, tlsutil.RoleCLI}} {
		if r.set {
			role, n = r.role, n+1
		}
	}
	if n != 1 {
		return usagef(e, "give exactly one of -server, -client and -cli")
	}
	if *days <= 0 {
		return usagef(e, "-days must be positive; got %d", *days)
	}
	req := tlsutil.CertRequest{Role: role, Region: *region, DNSNames: dnsNames, ValidFor: time.Duration(*days) * day}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return usagef(e, "-additional-ipaddress %q is not an IP address", s)
		}
		req.IPs = append(req.IPs, ip)
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		return errorf(e, "reading the CA (-ca): %v", err)
	}
	caKeyPEM, err := os.ReadFile(*keyFile)
	if err != nil {
		return errorf(e, "reading the CA key (-key): %v", err)
	}
	certPEM, keyPEM, err := tlsutil.GenerateCert(req, caPEM, caKeyPEM)
	if err != nil {
		return errorf(e, "creating the certificate: %v", err)
	}
	certOut, keyOut := tlsutil.CertFiles(role, *region)
	if role == tlsutil.RoleServer {
		fmt.Fprintln(e.stdout, "==> WARNING: a server certificate lets its holder act as a server: join Raft and read\n"+
			"    all state. Keep it on server machines only, as safely as the CA key.")
	}
	fmt.Fprintf(e.stdout, "==> Using CA file %s and CA key %s\n", *caFile, *keyFile)
	if err := writeNew(certOut, certPEM, 0o644); err != nil {
		return errorf(e, "%v", err)
	}
	fmt.Fprintf(e.stdout, "==> %s certificate saved to: %s\n", role, certOut)
	if err := writeNew(keyOut, keyPEM, 0o600); err != nil {
		return errorf(e, "%v", err)
	}
	fmt.Fprintf(e.stdout, "==> %s certificate key saved to: %s\n", role, keyOut)
	return 0
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s already exists; refusing to overwrite it", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

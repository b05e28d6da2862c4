package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Domain is the last label of the names agents' certificates carry:
// server.<region>.drover, as Nomad's server.<region>.nomad.
const Domain = "drover"

// Config is an agent's tls block.
type Config struct {
	// EnableHTTP serves the HTTP API over HTTPS (http).
	EnableHTTP bool
	// EnableRPC makes the RPC port (RPC and Raft) TLS only, and the
	// agent's own RPC and Raft connections TLS (rpc).
	EnableRPC bool
	// CAFile, CertFile and KeyFile are PEM files: the CA that signs every
	// agent's certificate, and this agent's certificate and key.
	CAFile, CertFile, KeyFile string
	// VerifyServerHostname: a client checks that a server's certificate
	// names server.<region>.drover, and a server grants a peer only what
	// its certificate's role allows (Role).
	VerifyServerHostname bool
	// VerifyHTTPSClient requires HTTPS clients to present a certificate
	// signed by the CA.
	VerifyHTTPSClient bool
}

// Role is what a peer's certificate makes it.
type Role uint8

const (
	// RoleNone: a certificate signed by the CA that names no role.
	RoleNone Role = iota
	// RoleCLI: cli.<region>.drover.
	RoleCLI
	// RoleClient: client.<region>.drover.
	RoleClient
	// RoleServer: server.<region>.drover.
	RoleServer
)

func (r Role) String() string {
	switch r {
	case RoleCLI:
		return "cli"
	case RoleClient:
		return "client"
	case RoleServer:
		return "server"
	}
	return "none"
}

// Name returns the DNS name a certificate for role in region carries:
// "server.global.drover".
func Name(role Role, region string) string {
	return role.String() + "." + region + "." + Domain
}

// Configurator holds the loaded certificates of one agent and hands out
// tls.Configs. It is safe for concurrent use.
type Configurator struct {
	cfg    Config
	region string
	cert   tls.Certificate
	pool   *x509.CertPool

	serverName string // server.<region>.drover
	clientName string
	cliName    string

	// Built once; shared by every connection (never modified).
	incomingRPC, outgoingRPC *tls.Config
}

// New loads the CA, certificate and key that cfg names. It returns nil
// and no error when neither RPC nor HTTP TLS is on.
func New(cfg Config, region string) (*Configurator, error) {
	if !cfg.EnableRPC && !cfg.EnableHTTP {
		return nil, nil
	}
	if cfg.CAFile == "" || cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("tls: ca_file, cert_file and key_file are required when http or rpc is true")
	}
	if region == "" {
		region = "global"
	}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls: ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: ca_file %s holds no PEM certificate", cfg.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: cert_file and key_file: %w", err)
	}
	c := &Configurator{
		cfg: cfg, region: region, cert: cert, pool: pool,
		serverName: Name(RoleServer, region),
		clientName: Name(RoleClient, region),
		cliName:    Name(RoleCLI, region),
	}
	c.incomingRPC, c.outgoingRPC = c.newIncomingRPC(), c.newOutgoingRPC()
	return c, nil
}

// RPC reports whether the RPC port is TLS (nil-safe).
func (c *Configurator) RPC() bool { return c != nil && c.cfg.EnableRPC }

// HTTP reports whether the HTTP API is HTTPS (nil-safe).
func (c *Configurator) HTTP() bool { return c != nil && c.cfg.EnableHTTP }

// VerifyServerHostname reports whether roles are enforced (nil-safe).
func (c *Configurator) VerifyServerHostname() bool {
	return c != nil && c.cfg.VerifyServerHostname
}

// Region is the region the role names are for.
func (c *Configurator) Region() string { return c.region }

// IncomingRPC is the servers' side of a TLS connection on the RPC port:
// the peer must present a certificate signed by the CA (mutual TLS, as
// Nomad's RPC always is). It is shared: do not modify it.
func (c *Configurator) IncomingRPC() *tls.Config { return c.incomingRPC }

func (c *Configurator) newIncomingRPC() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.cert},
		ClientCAs:    c.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

// OutgoingRPC is the dialing side (the RPC pool, Raft): it presents this
// agent's certificate and checks the server's against the CA and, with
// verify_server_hostname, that it names server.<region>.drover. It is
// shared: do not modify it.
func (c *Configurator) OutgoingRPC() *tls.Config { return c.outgoingRPC }

func (c *Configurator) newOutgoingRPC() *tls.Config {
	conf := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.cert},
		RootCAs:      c.pool,
		ServerName:   c.serverName,
	}
	if !c.cfg.VerifyServerHostname {
		// The chain is still checked, against the CA, without a name (the
		// address dialed is an IP the certificate need not carry).
		conf.InsecureSkipVerify = true
		conf.VerifyConnection = c.verifyChain
	}
	return conf
}

// verifyChain checks the peer's certificate chain against the CA only.
func (c *Configurator) verifyChain(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, ic := range cs.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: c.pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

// IncomingHTTP is the HTTPS server's configuration: with
// verify_https_client the client must present a certificate signed by
// the CA.
func (c *Configurator) IncomingHTTP() *tls.Config {
	conf := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.cert},
		ClientCAs:    c.pool,
		ClientAuth:   tls.NoClientCert,
	}
	if c.cfg.VerifyHTTPSClient {
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf
}

// OutgoingHTTP is what an agent uses to call another agent's HTTPS API
// (the CA, this agent's certificate as the client one).
func (c *Configurator) OutgoingHTTP() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.cert},
		RootCAs:      c.pool,
	}
}

// PeerRole reads the role of a verified peer from its leaf certificate's
// DNS names: server, client or cli for this region, else RoleNone (a
// certificate of another region is RoleNone too).
func (c *Configurator) PeerRole(cs tls.ConnectionState) Role {
	if len(cs.PeerCertificates) == 0 {
		return RoleNone
	}
	names := cs.PeerCertificates[0].DNSNames
	switch {
	case slices.Contains(names, c.serverName):
		return RoleServer
	case slices.Contains(names, c.clientName):
		return RoleClient
	case slices.Contains(names, c.cliName):
		return RoleCLI
	}
	return RoleNone
}

package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
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
	// RPCUpgradeMode (rpc_upgrade_mode, with rpc): the RPC port takes
	// plaintext connections as well as TLS ones, with no role checks on
	// them, while a cluster moves to TLS; this agent's own connections
	// use TLS. It may change on a reload.
	RPCUpgradeMode bool
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
// tls.Configs. It is safe for concurrent use. Reload swaps in new
// certificates and a new CA from the files: every tls.Config it handed out
// reads the current ones through callbacks, so connections made after a
// reload use them, and connections already open are left as they are (as
// Nomad's SIGHUP).
type Configurator struct {
	cfg    Config // the enable and verify flags never change after New
	region string

	serverName string // server.<region>.drover
	clientName string
	cliName    string

	reloadMu sync.Mutex             // serializes Reload
	cur      atomic.Pointer[loaded] // the certificates in use
	upgrade  atomic.Bool            // rpc_upgrade_mode, as last loaded

	// The configurations handed out: shells whose callbacks read cur.
	// Built once; shared by every connection (never modified).
	incomingRPC, outgoingRPC, incomingHTTP, outgoingHTTP *tls.Config
}

// loaded is one reading of the CA, certificate and key files, with the
// server-side configurations built on them.
type loaded struct {
	files                     [3]string // CAFile, CertFile, KeyFile
	cert                      tls.Certificate
	pool                      *x509.CertPool
	incomingRPC, incomingHTTP *tls.Config
}

// New loads the CA, certificate and key that cfg names. It returns nil
// and no error when neither RPC nor HTTP TLS is on.
func New(cfg Config, region string) (*Configurator, error) {
	if !cfg.EnableRPC && !cfg.EnableHTTP {
		return nil, nil
	}
	if region == "" {
		region = "global"
	}
	c := &Configurator{
		cfg: cfg, region: region,
		serverName: Name(RoleServer, region),
		clientName: Name(RoleClient, region),
		cliName:    Name(RoleCLI, region),
	}
	l, err := c.load(cfg)
	if err != nil {
		return nil, err
	}
	c.cur.Store(l)
	c.upgrade.Store(cfg.RPCUpgradeMode)
	c.incomingRPC = &tls.Config{MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return c.cur.Load().incomingRPC, nil }}
	c.incomingHTTP = &tls.Config{MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return c.cur.Load().incomingHTTP, nil }}
	c.outgoingRPC = c.newOutgoing(c.serverName, c.cfg.VerifyServerHostname)
	c.outgoingHTTP = c.newOutgoing("", false)
	return c, nil
}

// load reads cfg's files.
func (c *Configurator) load(cfg Config) (*loaded, error) {
	if cfg.CAFile == "" || cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("tls: ca_file, cert_file and key_file are required when http or rpc is true")
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
	l := &loaded{files: [3]string{cfg.CAFile, cfg.CertFile, cfg.KeyFile}, cert: cert, pool: pool}
	l.incomingRPC = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	l.incomingHTTP = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.NoClientCert,
	}
	if cfg.VerifyHTTPSClient {
		l.incomingHTTP.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return l, nil
}

// Reload reads the CA, certificate and key files of cfg (the agent's tls
// block read again) and uses them for new connections. Only the files and
// rpc_upgrade_mode may change: turning http or rpc TLS on or off, or a
// verify setting, needs a restart. On an error nothing changes.
func (c *Configurator) Reload(cfg Config) error {
	if c == nil {
		if cfg.EnableRPC || cfg.EnableHTTP {
			return errors.New("tls: TLS was off when the agent started; turning it on needs a restart")
		}
		return nil
	}
	if cfg.EnableRPC != c.cfg.EnableRPC || cfg.EnableHTTP != c.cfg.EnableHTTP ||
		cfg.VerifyServerHostname != c.cfg.VerifyServerHostname || cfg.VerifyHTTPSClient != c.cfg.VerifyHTTPSClient {
		return errors.New("tls: a reload changes only ca_file, cert_file, key_file (and the files' contents) and rpc_upgrade_mode; changing http, rpc, verify_server_hostname or verify_https_client needs a restart")
	}
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	l, err := c.load(cfg)
	if err != nil {
		return err
	}
	c.cur.Store(l)
	c.upgrade.Store(cfg.RPCUpgradeMode)
	return nil
}

// RPCUpgradeMode reports whether the RPC port also takes plaintext
// connections (rpc_upgrade_mode; nil-safe).
func (c *Configurator) RPCUpgradeMode() bool { return c != nil && c.upgrade.Load() }

// Certificate returns the leaf certificate in use (after the last reload).
func (c *Configurator) Certificate() *x509.Certificate {
	cert := c.cur.Load().cert
	if cert.Leaf != nil {
		return cert.Leaf
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
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

// OutgoingRPC is the dialing side (the RPC pool, Raft): it presents this
// agent's certificate and checks the server's against the CA and, with
// verify_server_hostname, that it names server.<region>.drover. It is
// shared: do not modify it.
func (c *Configurator) OutgoingRPC() *tls.Config { return c.outgoingRPC }

// IncomingHTTP is the HTTPS server's configuration: with
// verify_https_client the client must present a certificate signed by
// the CA. It is shared: do not modify it.
func (c *Configurator) IncomingHTTP() *tls.Config { return c.incomingHTTP }

// OutgoingHTTP is what an agent uses to call another agent's HTTPS API
// (the CA, this agent's certificate as the client one). It is shared: do
// not modify it.
func (c *Configurator) OutgoingHTTP() *tls.Config { return c.outgoingHTTP }

// newOutgoing is a dialing configuration that presents the current
// certificate and checks the peer's chain against the current CA (and,
// with checkName, that the leaf names name). Go's own verification is
// off because it would use a fixed RootCAs; VerifyConnection does it with
// the CA in use at handshake time.
func (c *Configurator) newOutgoing(name string, checkName bool) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: name,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &c.cur.Load().cert, nil
		},
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return c.verifyPeer(cs, name, checkName)
		},
	}
}

// verifyPeer checks a server's certificate chain against the current CA
// and, with checkName, that it names name.
func (c *Configurator) verifyPeer(cs tls.ConnectionState, name string, checkName bool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, ic := range cs.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	opts := x509.VerifyOptions{
		Roots: c.cur.Load().pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if checkName {
		opts.DNSName = name
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
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

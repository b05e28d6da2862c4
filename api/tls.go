package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
)

// TLSConfig is how the CLI reaches an HTTPS agent: Nomad's -ca-cert,
// -client-cert, -client-key, -tls-server-name and -tls-skip-verify, and
// their environment variables (DROVER_* first, then NOMAD_*).
type TLSConfig struct {
	// CACert is a PEM file of the CA that signed the agent's certificate
	// (empty: the system's roots).
	CACert string
	// ClientCert and ClientKey are a PEM certificate and key to present
	// (required by an agent with verify_https_client).
	ClientCert, ClientKey string
	// ServerName, if set, is the name checked in the agent's certificate
	// instead of the address's host.
	ServerName string
	// Insecure skips checking the agent's certificate (testing only).
	Insecure bool
}

// TLSConfigFromEnv reads DROVER_CACERT, DROVER_CLIENT_CERT,
// DROVER_CLIENT_KEY, DROVER_TLS_SERVER_NAME and DROVER_SKIP_VERIFY, each
// falling back to its NOMAD_ name. getenv is os.Getenv outside tests.
func TLSConfigFromEnv(getenv func(string) string) TLSConfig {
	get := func(name string) string {
		if v := getenv("DROVER_" + name); v != "" {
			return v
		}
		return getenv("NOMAD_" + name)
	}
	insecure, _ := strconv.ParseBool(get("SKIP_VERIFY"))
	return TLSConfig{CACert: get("CACERT"), ClientCert: get("CLIENT_CERT"), ClientKey: get("CLIENT_KEY"),
		ServerName: get("TLS_SERVER_NAME"), Insecure: insecure}
}

// IsZero reports whether nothing is set (plain http.DefaultClient does).
func (t TLSConfig) IsZero() bool { return t == TLSConfig{} }

// HTTPClient returns an HTTP client with this TLS configuration.
func (t TLSConfig) HTTPClient() (*http.Client, error) {
	conf, err := t.ClientConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = conf
	return &http.Client{Transport: tr}, nil
}

// ClientConfig returns the crypto/tls client configuration: the CA's
// pool as roots, the client certificate loaded. An error names the flag
// whose file could not be used.
func (t TLSConfig) ClientConfig() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.Insecure}
	if t.CACert != "" {
		pem, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("reading the CA certificate (-ca-cert): %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-ca-cert %s holds no PEM certificate", t.CACert)
		}
		conf.RootCAs = pool
	}
	switch {
	case t.ClientCert != "" && t.ClientKey != "":
		cert, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("loading the client certificate (-client-cert, -client-key): %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	case t.ClientCert != "" || t.ClientKey != "":
		return nil, ErrClientCertWithoutKey
	}
	return conf, nil
}

// ErrClientCertWithoutKey: only one of -client-cert and -client-key was
// given.
var ErrClientCertWithoutKey = errors.New("-client-cert and -client-key go together")

// FailingClient is an HTTP client whose every request fails with err: a
// client whose TLS could not be set up reports why on first use.
func FailingClient(err error) *http.Client {
	return &http.Client{Transport: failingTransport{err}}
}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// File names of `drover tls`, Nomad's with drover in place of nomad.
const (
	CAFile    = "drover-agent-ca.pem"
	CAKeyFile = "drover-agent-ca-key.pem"
)

// CertFiles returns the certificate and key file names of a role's
// certificate: global-server-drover.pem and global-server-drover-key.pem.
func CertFiles(role Role, region string) (cert, key string) {
	base := region + "-" + role.String() + "-" + Domain
	return base + ".pem", base + "-key.pem"
}

// GenerateCA makes a self-signed CA certificate and its ECDSA P-256 key,
// both PEM encoded, valid for the given duration.
func GenerateCA(validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Drover Agent CA " + serial.String(), Organization: []string{"Drover"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validFor),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// CertRequest describes an agent certificate.
type CertRequest struct {
	Role   Role
	Region string
	// DNSNames and IPs are added to the role's name, localhost and
	// 127.0.0.1 (which every certificate carries, as Nomad's do).
	DNSNames []string
	IPs      []net.IP
	ValidFor time.Duration
}

// GenerateCert makes a certificate for req signed by the PEM CA and key,
// with an ECDSA P-256 key of its own; both PEM encoded. Server and client
// certificates serve both TLS sides (the RPC port is dialed by servers
// and clients alike); a cli certificate is a client one.
func GenerateCert(req CertRequest, caPEM, caKeyPEM []byte) (certPEM, keyPEM []byte, err error) {
	if req.Role != RoleServer && req.Role != RoleClient && req.Role != RoleCLI {
		return nil, nil, errors.New("tls: a certificate is for a server, a client or the cli")
	}
	if req.Region == "" {
		req.Region = "global"
	}
	ca, caKey, err := parseCA(caPEM, caKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	name := Name(req.Role, req.Region)
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if req.Role == RoleCLI {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(req.ValidFor),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           usage,
		DNSNames:              append([]string{name, "localhost"}, req.DNSNames...),
		IPAddresses:           append([]net.IP{net.IPv4(127, 0, 0, 1)}, req.IPs...),
		SubjectKeyId:          keyID(&key.PublicKey),
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func parseCA(caPEM, caKeyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	b, _ := pem.Decode(caPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, errors.New("tls: the CA file holds no PEM certificate")
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA certificate: %w", err)
	}
	kb, _ := pem.Decode(caKeyPEM)
	if kb == nil {
		return nil, nil, errors.New("tls: the CA key file holds no PEM key")
	}
	var key any
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("tls: the CA key cannot sign")
	}
	return ca, signer, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

func keyID(pub *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

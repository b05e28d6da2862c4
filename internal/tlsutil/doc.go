// Package tlsutil turns an agent's tls block (Nomad's names and meanings)
// into crypto/tls configurations for the RPC port (servers' listener,
// the RPC pool and Raft's dialer) and the HTTP API, and reads the role a
// peer's certificate gives it: server.<region>.drover,
// client.<region>.drover or cli.<region>.drover in its DNS names.
//
// It also makes a local certificate authority and the agents'
// certificates (ECDSA P-256), for `drover tls ca create` and `drover tls
// cert create`.
//
// It must never weaken verification: every peer certificate is checked
// against the configured CA, on both sides of the RPC port; only the
// server name check is skipped when verify_server_hostname is off, as in
// Nomad. It knows nothing of RPC methods; the servers map roles to what
// they allow (server/rpc_roles.go).
package tlsutil

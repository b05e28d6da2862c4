package agent

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/drover-project/drover/server"
)

// LimitsConfig is the agent's limits { } block, with Nomad's names and
// defaults: what one peer may hold of the agent's ports before it has
// proved anything (docs/security.md, "Bounded inputs").
type LimitsConfig struct {
	// HTTPMaxConnsPerClient bounds the HTTP connections one IP address may
	// hold open (http_max_conns_per_client, 100); beyond it a connection
	// gets a 429 and is closed. 0 disables the limit.
	HTTPMaxConnsPerClient int
	// RPCMaxConnsPerClient bounds the connections one IP address may hold
	// open on the RPC port (rpc_max_conns_per_client, 100), Raft's
	// included; beyond it a connection is closed at once and logged. 0
	// disables the limit.
	RPCMaxConnsPerClient int
	// RPCHandshakeTimeout bounds how long a new RPC-port connection may
	// take to send its protocol byte and first yamux frame
	// (rpc_handshake_timeout, "5s"). Established connections have no
	// read deadline.
	RPCHandshakeTimeout time.Duration
}

// DefaultLimits are Nomad's defaults.
func DefaultLimits() LimitsConfig {
	return LimitsConfig{
		HTTPMaxConnsPerClient: DefaultMaxConnsPerClient,
		RPCMaxConnsPerClient:  server.DefaultRPCMaxConnsPerClient,
		RPCHandshakeTimeout:   server.DefaultRPCHandshakeTimeout,
	}
}

// fileLimits is the file form of the limits block. Nomad's
// https_handshake_timeout is not listed (gohcl refuses it as an
// unsupported argument with its position): net/http bounds an HTTPS
// handshake by the smallest of the API's read and write timeouts.
type fileLimits struct {
	HTTPMaxConnsPerClient      *int      `hcl:"http_max_conns_per_client,optional"`
	HTTPMaxConnsPerClientRange hcl.Range `hcl:"http_max_conns_per_client,attr_value_range"`
	RPCMaxConnsPerClient       *int      `hcl:"rpc_max_conns_per_client,optional"`
	RPCMaxConnsPerClientRange  hcl.Range `hcl:"rpc_max_conns_per_client,attr_value_range"`
	RPCHandshakeTimeout        *string   `hcl:"rpc_handshake_timeout,optional"`
	RPCHandshakeTimeoutRange   hcl.Range `hcl:"rpc_handshake_timeout,attr_value_range"`
}

// apply sets what the block names onto l; errors name file:line:col.
func (fl *fileLimits) apply(l *LimitsConfig) error {
	if fl == nil {
		return nil
	}
	for _, n := range []struct {
		name string
		val  *int
		rng  hcl.Range
		dst  *int
	}{
		{"http_max_conns_per_client", fl.HTTPMaxConnsPerClient, fl.HTTPMaxConnsPerClientRange, &l.HTTPMaxConnsPerClient},
		{"rpc_max_conns_per_client", fl.RPCMaxConnsPerClient, fl.RPCMaxConnsPerClientRange, &l.RPCMaxConnsPerClient},
	} {
		if n.val == nil {
			continue
		}
		if *n.val < 0 {
			return fmt.Errorf("%s: %s: must not be negative (0 disables the limit); got %d", posString(n.rng), n.name, *n.val)
		}
		*n.dst = *n.val
	}
	return applyDurations([]durationSetting{
		{"rpc_handshake_timeout", fl.RPCHandshakeTimeout, fl.RPCHandshakeTimeoutRange, &l.RPCHandshakeTimeout, true},
	})
}

// validate reports the problems of the limits, one error each.
func (l LimitsConfig) validate() []error {
	var errs []error
	if l.HTTPMaxConnsPerClient < 0 {
		errs = append(errs, fmt.Errorf("limits http_max_conns_per_client must not be negative; got %d", l.HTTPMaxConnsPerClient))
	}
	if l.RPCMaxConnsPerClient < 0 {
		errs = append(errs, fmt.Errorf("limits rpc_max_conns_per_client must not be negative; got %d", l.RPCMaxConnsPerClient))
	}
	if l.RPCHandshakeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("limits rpc_handshake_timeout must be a positive duration; got %s", l.RPCHandshakeTimeout))
	}
	return errs
}

// serverRPCLimits sets the server's RPC-port limits from l (the server's
// own convention: 0 takes its default, negative means none).
func (l LimitsConfig) serverRPCLimits(sc *server.Config) {
	sc.RPCMaxConnsPerClient = l.RPCMaxConnsPerClient
	if sc.RPCMaxConnsPerClient == 0 {
		sc.RPCMaxConnsPerClient = -1
	}
	sc.RPCHandshakeTimeout = l.RPCHandshakeTimeout
}

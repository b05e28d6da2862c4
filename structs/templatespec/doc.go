// Package templatespec checks a task's template blocks without a client:
// the servers call Validate at job registration, so a template that does
// not parse with its delimiters, calls a function consul-template does not
// have, or calls one Drover cannot serve (Consul's and Vault's: there is
// no Consul or Vault) is refused with its field named, never discovered
// when a client renders it.
//
// The function names are those of consul-template v0.41 (the library the
// client renders with, agent/client/template), whose test checks the two
// lists agree. A signal-mode template's change_signal must name a signal.
// This package imports only structs, structs/driverspec (signal names),
// the standard library's text/template and sprig's function table; it must never import the
// renderer or anything that reaches the network.
package templatespec

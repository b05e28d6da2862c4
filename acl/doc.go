// Package acl is Nomad's ACL policy language and the capability checks
// built from it.
//
// Parse reads one policy (HCL or JSON, Nomad's syntax) into a Policy,
// with each `policy = "..."` shorthand expanded into the capabilities
// Nomad grants for it. New merges the parsed policies of one token into
// an ACL, whose Allow* methods answer whether an operation is permitted.
// Namespace rules are keyed by name: a name is matched exactly, or by the
// glob rules documented on ACL.namespaceCapabilities, never by prefix.
//
// The package imports nothing of Drover's but internal/hcllimit (the
// bounds every HCL input is checked against): it must never read the
// state store, resolve tokens or know about RPC methods. The server (token
// resolution, the per-method rule table) and the agent (HTTP-only
// endpoints) use it.
package acl

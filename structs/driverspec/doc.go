// Package driverspec holds each built-in task driver's configuration
// schema, so that a task's `config` block can be checked without a client:
// servers call ValidateTaskConfig at job registration (a bad config is
// refused with the field named, never discovered at run time), and the
// client's drivers decode their config with the same specs. It also parses
// kill signal names.
//
// It imports only structs and the standard library, and must never import
// a driver implementation or anything that starts processes.
package driverspec

// Package api is a small Go client for Drover's HTTP API, used by the
// drover CLI. Its paths, query parameters and headers are Nomad's, so it
// also talks to a Nomad agent for the endpoints both have.
//
// Usage:
//
//	c := api.NewClient(api.AddressFromEnv(os.Getenv))
//	leader, err := c.Leader(ctx)
//	var se *api.StatusError
//	if errors.As(err, &se) && se.Code == 404 { ... }
//
// This package imports only package structs (for the wire types) and must
// never import another Drover package: it is the boundary a user's program
// may link against.
package api

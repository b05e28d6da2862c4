package client

import (
	"errors"

	"github.com/drover-project/drover/structs"
)

// serviceRPC registers allocations' native services with the servers,
// authenticated by the node's secret (allocrunner.ServiceRegistrar).
type serviceRPC struct{ c *Client }

func (s serviceRPC) write(method string, args any) error {
	var resp structs.GenericResponse
	return s.c.RPC(method, args, &resp)
}

func (s serviceRPC) writeRequest(namespace string) structs.WriteRequest {
	_, secret := s.c.nodeIdentity()
	return structs.WriteRequest{Region: s.c.cfg.Region, Namespace: namespace, AuthToken: secret}
}

// RegisterServices writes regs.
func (s serviceRPC) RegisterServices(regs []*structs.ServiceRegistration) error {
	return s.write("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{
		Services: regs, WriteRequest: s.writeRequest("")})
}

// DeregisterServices removes registrations by ID; one already gone is not
// an error.
func (s serviceRPC) DeregisterServices(namespace string, ids []string) error {
	for _, id := range ids {
		err := s.write("ServiceRegistration.DeleteByID", &structs.ServiceRegistrationDeleteByIDRequest{
			ID: id, WriteRequest: s.writeRequest(namespace)})
		if err != nil && !errors.Is(err, structs.ErrNotFound) {
			return err
		}
	}
	return nil
}

// DeregisterAlloc removes every registration of the allocation.
func (s serviceRPC) DeregisterAlloc(allocID string) error {
	return s.write("ServiceRegistration.DeleteByAllocIDs", &structs.ServiceRegistrationDeleteByAllocIDsRequest{
		AllocIDs: []string{allocID}, WriteRequest: s.writeRequest("")})
}

// AllocChecks returns the latest results of an allocation's health
// checks, by check ID: Nomad's GET /v1/client/allocation/<id>/checks. An
// allocation this client does not run is a not-found error.
func (c *Client) AllocChecks(allocID string) (map[string]*structs.CheckQueryResult, error) {
	ar := c.runner(allocID)
	if ar == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this client", allocID)
	}
	out := ar.CheckResults()
	if out == nil {
		out = map[string]*structs.CheckQueryResult{}
	}
	return out, nil
}

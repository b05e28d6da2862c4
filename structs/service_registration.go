package structs

import (
	"slices"
	"strconv"
	"strings"
)

// ServiceRegistration is one running instance of a service: an address
// a client registered for an allocation on it, in Nomad's shape. The ID
// is the client's and stable (ServiceRegistrationID), so registering
// again is idempotent.
type ServiceRegistration struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a copy of the registration.
func (s *ServiceRegistration) Copy() *ServiceRegistration {
	if s == nil {
		return nil
	}
	c := *s
	c.Tags = slices.Clone(s.Tags)
	return &c
}

// Equal reports whether two registrations say the same, indexes aside.
func (s *ServiceRegistration) Equal(o *ServiceRegistration) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.ID == o.ID && s.ServiceName == o.ServiceName && s.Namespace == o.Namespace &&
		s.NodeID == o.NodeID && s.Datacenter == o.Datacenter && s.JobID == o.JobID &&
		s.AllocID == o.AllocID && slices.Equal(s.Tags, o.Tags) && s.Address == o.Address && s.Port == o.Port
}

// Validate checks what the store indexes and the API shows.
func (s *ServiceRegistration) Validate() error {
	v := &validator{}
	for _, f := range []struct{ name, val string }{
		{"ID", s.ID}, {"ServiceName", s.ServiceName}, {"Namespace", s.Namespace},
		{"NodeID", s.NodeID}, {"JobID", s.JobID}, {"AllocID", s.AllocID},
	} {
		if f.val == "" {
			v.add(f.name, "must be set")
		}
	}
	if s.AllocID != "" && s.ID != "" && !strings.HasPrefix(s.ID, ServiceRegistrationAllocPrefix(s.AllocID)) {
		v.add("ID", "must start with %q, its allocation's prefix", ServiceRegistrationAllocPrefix(s.AllocID))
	}
	if s.Port < 0 || s.Port > MaxValidPort {
		v.add("Port", "must be between 0 and %d; got %d", MaxValidPort, s.Port)
	}
	return v.err()
}

// ServiceRegistrationAllocPrefix is how the ID of every registration of
// the allocation starts (ServiceRegistrationID): the state store finds an
// allocation's registrations by it.
func ServiceRegistrationAllocPrefix(allocID string) string {
	return "_nomad-task-" + allocID + "-"
}

// ServiceRegistrationID is the ID of a service's registration for an
// allocation: _nomad-task-<alloc>-<task>-<service>-<port> for a task's
// service and _nomad-task-<alloc>-group-<group>-<service>-<port> for a
// group's, as Nomad's client names them. The same service of the same
// allocation always gets the same ID.
func ServiceRegistrationID(allocID, task, group, service, portLabel string) string {
	var b strings.Builder
	b.WriteString("_nomad-task-")
	b.WriteString(allocID)
	b.WriteByte('-')
	if task == "" {
		b.WriteString("group-")
		b.WriteString(group)
	} else {
		b.WriteString(task)
	}
	b.WriteByte('-')
	b.WriteString(service)
	b.WriteByte('-')
	b.WriteString(portLabel)
	return b.String()
}

// ServiceRegistrationListStub is one namespace's service names and tags
// (GET /v1/services).
type ServiceRegistrationListStub struct {
	Namespace string
	Services  []*ServiceRegistrationStub
}

// ServiceRegistrationStub is one service name with the union of its
// instances' tags.
type ServiceRegistrationStub struct {
	ServiceName string
	Tags        []string
}

// ServiceRegistrationUpsertRequest registers services (a client's, with
// its node secret as AuthToken) and is the Raft entry that writes them.
type ServiceRegistrationUpsertRequest struct {
	Services []*ServiceRegistration
	WriteRequest
}

// ServiceRegistrationDeleteByIDRequest removes one registration, in the
// request's namespace.
type ServiceRegistrationDeleteByIDRequest struct {
	ID string
	WriteRequest
}

// ServiceRegistrationDeleteByAllocIDsRequest removes every registration
// of the allocations (a client's, when an allocation stops).
type ServiceRegistrationDeleteByAllocIDsRequest struct {
	AllocIDs []string
	WriteRequest
}

// ServiceRegistrationListRequest lists service names (Namespace "*" for
// every namespace).
type ServiceRegistrationListRequest struct {
	QueryOptions
}

// ServiceRegistrationListResponse answers a list, by namespace.
type ServiceRegistrationListResponse struct {
	Services []*ServiceRegistrationListStub
	QueryMeta
}

// ServiceRegistrationByNameRequest reads one service's registrations;
// Choose is Nomad's "<n>|<key>": n of them, picked by rendezvous hashing
// on key, so the same key keeps the same instances.
type ServiceRegistrationByNameRequest struct {
	ServiceName string
	Choose      string
	QueryOptions
}

// ServiceRegistrationByNameResponse answers a read by name.
type ServiceRegistrationByNameResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}

// JobServiceRegistrationsRequest reads a job's registrations.
type JobServiceRegistrationsRequest struct {
	JobID string
	QueryOptions
}

// JobServiceRegistrationsResponse answers a read by job. Services is nil
// when the job does not exist (Nomad's null), empty when it has none.
type JobServiceRegistrationsResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}

// AllocServiceRegistrationsRequest reads an allocation's registrations.
type AllocServiceRegistrationsRequest struct {
	AllocID string
	QueryOptions
}

// AllocServiceRegistrationsResponse answers a read by allocation. Services
// is nil when the allocation does not exist.
type AllocServiceRegistrationsResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}

// ParseChoose reads ?choose=<n>|<key>; ok is false when it is malformed.
func ParseChoose(s string) (n int, key string, ok bool) {
	num, key, found := strings.Cut(s, "|")
	if !found || key == "" {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return 0, "", false
	}
	return n, key, true
}

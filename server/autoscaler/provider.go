package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Provider creates, lists and destroys instances somewhere (this machine,
// a cloud). The autoscaler calls it from the leader only, one call at a
// time per provider.
//
// A provider must:
//   - carry the spec's Tags on what it creates, and find an instance by
//     them in List as soon as Create has returned (the leader relies on
//     List to adopt instances after a failover);
//   - treat Create as idempotent by the drover.instance_id tag: a second
//     Create with an ID that already exists returns that instance;
//   - report a refusal for lack of quota as a *QuotaError (the autoscaler
//     then creates nothing in the pool for its quota back-off);
//   - treat Destroy of an instance that no longer exists as success.
type Provider interface {
	// Create starts an instance; it returns once the provider accepted
	// it (not when its node is up: the autoscaler probes for that).
	Create(ctx context.Context, spec CreateSpec) (*Instance, error)
	// List returns the instances carrying every tag in tags.
	List(ctx context.Context, tags map[string]string) ([]*Instance, error)
	// Destroy stops and removes an instance by its provider ID.
	Destroy(ctx context.Context, providerID string) error
}

// CreateSpec is what to create.
type CreateSpec struct {
	// ID is the autoscaler's instance ID (also in Tags).
	ID string
	// Pool is the node pool the instance's client joins.
	Pool string
	// ProviderType is the provider's name of the kind of instance; CPU
	// (MHz) and MemoryMB are what its node should offer.
	ProviderType string
	CPU          int
	MemoryMB     int
	// Tags must be carried by the instance (see Provider).
	Tags map[string]string
	// Meta is client meta the instance's node must report (it holds
	// drover.instance_id: the boot probe matches nodes by it).
	Meta map[string]string
	// Options are the pool's ProviderOptions.
	Options map[string]string
}

// Instance is an instance as a provider sees it.
type Instance struct {
	// ProviderID is the provider's ID of it (what Destroy takes).
	ProviderID string
	Tags       map[string]string
	// Running is false when the provider knows it stopped (it should be
	// destroyed).
	Running bool
	Created time.Time
}

// QuotaError is a provider's refusal for lack of quota.
type QuotaError struct {
	Message string
}

func (e *QuotaError) Error() string { return "quota exceeded: " + e.Message }

// IsQuotaError reports whether err is (or wraps) a *QuotaError.
func IsQuotaError(err error) bool {
	var q *QuotaError
	return errors.As(err, &q)
}

// ErrNotConfigured is what the cloud skeleton answers.
var ErrNotConfigured = errors.New("autoscaler: provider not configured")

// CloudSkeleton is the outline of a cloud provider: every method fails
// with ErrNotConfigured. Drover ships no cloud SDK; to add a cloud:
//
//  1. Copy this type into a package of your own and give it the client
//     of the cloud's API (credentials from the server's environment,
//     never from the pool configuration, which operators write).
//  2. Create: launch one instance of spec.ProviderType with spec.Tags as
//     the cloud's tags (or labels), a boot script that writes a Drover
//     client configuration (servers, node_pool = spec.Pool, client meta
//     spec.Meta, cpu_total_compute and memory_total_mb if the instance
//     offers more than the type says) and starts `drover agent -client`.
//     Look the ID up by tag first, so a repeated Create returns the
//     existing instance. Map the cloud's quota or capacity errors to
//     *QuotaError.
//  3. List: query instances by tag; Running is false for stopped or
//     terminated ones.
//  4. Destroy: terminate by provider ID; "not found" is success.
//  5. Register it with the server (server.Config.AutoscaleProviders) under
//     the name pools use in their Provider field.
type CloudSkeleton struct {
	// Name is the provider's name in messages.
	Name string
}

// Create fails with ErrNotConfigured.
func (c *CloudSkeleton) Create(context.Context, CreateSpec) (*Instance, error) {
	return nil, fmt.Errorf("%w: %s", ErrNotConfigured, c.Name)
}

// List fails with ErrNotConfigured.
func (c *CloudSkeleton) List(context.Context, map[string]string) ([]*Instance, error) {
	return nil, fmt.Errorf("%w: %s", ErrNotConfigured, c.Name)
}

// Destroy fails with ErrNotConfigured.
func (c *CloudSkeleton) Destroy(context.Context, string) error {
	return fmt.Errorf("%w: %s", ErrNotConfigured, c.Name)
}

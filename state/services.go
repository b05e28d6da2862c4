package state

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Native service registrations. Clients write them; the store removes
// them, in the same transaction, when what they describe goes away: their
// allocation becomes terminal (client or desired status) or is deleted,
// their job is purged, their node goes down or is deleted. So no
// registration outlives its allocation, and none survives a lost node.

// UpsertServiceRegistrations writes regs, keeping each existing one's
// CreateIndex (an unchanged one is not rewritten). A registration whose
// allocation is unknown or terminal, or whose node is down, is skipped:
// a client's registration that lost the race with the allocation's stop
// must not bring back what the stop removed.
func (s *StateStore) UpsertServiceRegistrations(index uint64, regs []*structs.ServiceRegistration) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertServiceRegistrations(index, regs); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertServiceRegistrations is StateStore.UpsertServiceRegistrations
// within the batch.
func (b *Batch) UpsertServiceRegistrations(index uint64, regs []*structs.ServiceRegistration) error {
	txn := b.txn
	txn.t.begin(index)
	changed := false
	for _, r := range regs {
		if r == nil || r.Validate() != nil {
			continue
		}
		alloc, err := txn.alloc(r.AllocID)
		if err != nil {
			return err
		}
		if alloc == nil || alloc.TerminalStatus() || alloc.NodeID != r.NodeID {
			continue
		}
		if raw, err := txn.first(TableNodes, r.NodeID); err != nil {
			return err
		} else if raw == nil || raw.(*structs.Node).TerminalStatus() {
			continue
		}
		prev, err := txn.first(TableServiceRegs, r.ID)
		if err != nil {
			return err
		}
		c := r.Copy()
		c.CreateIndex, c.ModifyIndex = index, index
		if prev != nil {
			p := prev.(*structs.ServiceRegistration)
			if p.Equal(c) {
				continue
			}
			c.CreateIndex = p.CreateIndex
		}
		if err := txn.insert(TableServiceRegs, c); err != nil {
			return fmt.Errorf("state: inserting service registration %q: %w", c.ID, err)
		}
		changed = true
	}
	if changed {
		txn.svcRows = svcRowsSome
		txn.t.add(TableServiceRegs)
	}
	return nil
}

// DeleteServiceRegistrationByID removes one registration of namespace; a
// missing one is a not-found error.
func (s *StateStore) DeleteServiceRegistrationByID(index uint64, namespace, id string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteServiceRegistrationByID(index, namespace, id); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteServiceRegistrationByID is StateStore.DeleteServiceRegistrationByID
// within the batch.
func (b *Batch) DeleteServiceRegistrationByID(index uint64, namespace, id string) error {
	b.txn.t.begin(index)
	r, err := lookup[structs.ServiceRegistration](b.txn, TableServiceRegs, "service registration", id, id)
	if err != nil {
		return err
	}
	if r.Namespace != defaultNamespace(namespace) {
		return structs.NewError(structs.ErrCodeNotFound, "service registration %q not found", id)
	}
	if err := b.txn.delete(TableServiceRegs, r); err != nil {
		return fmt.Errorf("state: deleting service registration: %w", err)
	}
	b.txn.t.add(TableServiceRegs)
	return nil
}

// DeleteServiceRegistrationsByAllocIDs removes every registration of the
// allocations.
func (s *StateStore) DeleteServiceRegistrationsByAllocIDs(index uint64, allocIDs []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteServiceRegistrationsByAllocIDs(index, allocIDs); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteServiceRegistrationsByAllocIDs is the batch's
// StateStore.DeleteServiceRegistrationsByAllocIDs.
func (b *Batch) DeleteServiceRegistrationsByAllocIDs(index uint64, allocIDs []string) error {
	b.txn.t.begin(index)
	for _, id := range allocIDs {
		if err := b.txn.deleteAllocServices(id); err != nil {
			return err
		}
	}
	return nil
}

// svcRows caches, per write transaction, whether the registrations table
// may hold rows, so that writes of clusters without services (and of
// allocations without them) pay one lookup per transaction at most.
type svcRows uint8

const (
	svcRowsUnknown svcRows = iota
	svcRowsNone
	svcRowsSome
)

// hasServices reports whether the registrations table may hold rows.
func (w *writeTxn) hasServices() (bool, error) {
	if w.svcRows == svcRowsUnknown {
		raw, err := w.txn.First(TableServiceRegs, IndexID)
		if err != nil {
			return false, fmt.Errorf("state: reading %s: %w", TableServiceRegs, err)
		}
		w.svcRows = svcRowsNone
		if raw != nil {
			w.svcRows = svcRowsSome
		}
	}
	return w.svcRows == svcRowsSome, nil
}

// The registrations table is indexed by ID and by service name only:
// every registration's ID starts with its allocation's prefix
// (structs.ServiceRegistrationAllocPrefix, checked by Validate), so an
// allocation's registrations are a range of the ID index, and a job's or
// a node's are those of its allocations. Each index costs every server a
// radix-tree insert per registration; at a service per allocation, the
// three others made registering cost more than placing.

// deleteAllocServices removes every registration of the allocation.
func (w *writeTxn) deleteAllocServices(allocID string) error {
	if ok, err := w.hasServices(); !ok || err != nil {
		return err
	}
	rows, err := listWrite[structs.ServiceRegistration](w, TableServiceRegs, IndexID+prefixSuffix, structs.ServiceRegistrationAllocPrefix(allocID))
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := w.delete(TableServiceRegs, r); err != nil {
			return fmt.Errorf("state: deleting service registration %q: %w", r.ID, err)
		}
	}
	if len(rows) > 0 {
		w.t.add(TableServiceRegs)
	}
	return nil
}

// deleteJobServices removes the registrations of every allocation of the
// job.
func (w *writeTxn) deleteJobServices(namespace, jobID string) error {
	if ok, err := w.hasServices(); !ok || err != nil {
		return err
	}
	var ids []string
	if err := w.eachAlloc(namespace, jobID, func(a *structs.Allocation) bool {
		ids = append(ids, a.ID)
		return true
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := w.deleteAllocServices(id); err != nil {
			return err
		}
	}
	return nil
}

// deleteNodeServices removes the registrations of every allocation on the
// node: those its row lists and those this transaction placed on it.
func (w *writeTxn) deleteNodeServices(nodeID string) error {
	if ok, err := w.hasServices(); !ok || err != nil {
		return err
	}
	row, err := w.nodeRow(nodeID)
	if err != nil {
		return err
	}
	if row != nil {
		for _, r := range row.Allocs {
			if err := w.deleteAllocServices(r.ID); err != nil {
				return err
			}
		}
	}
	if d := w.nodes[nodeID]; d != nil {
		for _, c := range d.refs {
			if !c.removed {
				if err := w.deleteAllocServices(c.ref.ID); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// allocServicesEnd removes the registrations of an allocation that has
// just become terminal (a == nil: deleted). It is called for every
// allocation write, and does nothing unless the allocation has just
// stopped.
func (w *writeTxn) allocServicesEnd(prev, a *structs.Allocation) error {
	switch {
	case a == nil && prev != nil:
		return w.deleteAllocServices(prev.ID)
	case a != nil && a.TerminalStatus() && (prev == nil || !prev.TerminalStatus()):
		return w.deleteAllocServices(a.ID)
	}
	return nil
}

// ServiceRegistrationByID returns one registration, or a not-found error.
func (s *StateStore) ServiceRegistrationByID(ws memdb.WatchSet, id string) (*structs.ServiceRegistration, error) {
	return firstTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, "service registration", id, id)
}

// ServiceRegistrations returns every registration, by ID.
func (s *StateStore) ServiceRegistrations(ws memdb.WatchSet) ([]*structs.ServiceRegistration, error) {
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexID)
}

// ServiceRegistrationsByName returns the registrations of one service in
// namespace, by ID.
func (s *StateStore) ServiceRegistrationsByName(ws memdb.WatchSet, namespace, name string) ([]*structs.ServiceRegistration, error) {
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexServiceName, defaultNamespace(namespace), name)
}

// ServiceRegistrationsByNamespace returns the registrations of namespace
// ("*": every one), by service name.
func (s *StateStore) ServiceRegistrationsByNamespace(ws memdb.WatchSet, namespace string) ([]*structs.ServiceRegistration, error) {
	if namespace == "*" {
		out, err := s.ServiceRegistrations(ws)
		sort.SliceStable(out, func(i, j int) bool {
			if out[i].Namespace != out[j].Namespace {
				return out[i].Namespace < out[j].Namespace
			}
			return out[i].ServiceName < out[j].ServiceName
		})
		return out, err
	}
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexServiceName+prefixSuffix, defaultNamespace(namespace))
}

// ServiceRegistrationsByAllocID returns an allocation's registrations.
func (s *StateStore) ServiceRegistrationsByAllocID(ws memdb.WatchSet, allocID string) ([]*structs.ServiceRegistration, error) {
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexID+prefixSuffix, structs.ServiceRegistrationAllocPrefix(allocID))
}

// ServiceRegistrationsByJobID returns a job's registrations: those of its
// allocations, by allocation ID. ws also watches the job's allocations.
func (s *StateStore) ServiceRegistrationsByJobID(ws memdb.WatchSet, namespace, jobID string) ([]*structs.ServiceRegistration, error) {
	allocs, err := s.AllocsByJob(ws, defaultNamespace(namespace), jobID)
	if err != nil {
		return nil, err
	}
	return s.allocsServices(ws, allocs)
}

// ServiceRegistrationsByNodeID returns a node's registrations: those of
// its allocations, by allocation ID. ws also watches the node's
// allocations.
func (s *StateStore) ServiceRegistrationsByNodeID(ws memdb.WatchSet, nodeID string) ([]*structs.ServiceRegistration, error) {
	allocs, err := s.AllocsByNode(ws, nodeID)
	if err != nil {
		return nil, err
	}
	return s.allocsServices(ws, allocs)
}

// allocsServices returns the registrations of the live allocations among
// allocs, read from one transaction (terminal allocations have none).
func (s *StateStore) allocsServices(ws memdb.WatchSet, allocs []*structs.Allocation) ([]*structs.ServiceRegistration, error) {
	allocs = slices.SortedFunc(slices.Values(allocs), func(a, b *structs.Allocation) int { return strings.Compare(a.ID, b.ID) })
	txn := s.db.Txn(false)
	var out []*structs.ServiceRegistration
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		regs, err := listTxn[structs.ServiceRegistration](txn, ws, TableServiceRegs, IndexID+prefixSuffix, structs.ServiceRegistrationAllocPrefix(a.ID))
		if err != nil {
			return nil, err
		}
		out = append(out, regs...)
	}
	return out, nil
}

// ServiceRegistrationStubs groups registrations (sorted by namespace,
// then service name) into Nomad's list shape: per namespace, each service
// name once with the sorted union of its instances' tags.
func ServiceRegistrationStubs(regs []*structs.ServiceRegistration) []*structs.ServiceRegistrationListStub {
	out := []*structs.ServiceRegistrationListStub{}
	var ns *structs.ServiceRegistrationListStub
	var svc *structs.ServiceRegistrationStub
	for _, r := range regs {
		if ns == nil || ns.Namespace != r.Namespace {
			ns = &structs.ServiceRegistrationListStub{Namespace: r.Namespace, Services: []*structs.ServiceRegistrationStub{}}
			out = append(out, ns)
			svc = nil
		}
		if svc == nil || svc.ServiceName != r.ServiceName {
			svc = &structs.ServiceRegistrationStub{ServiceName: r.ServiceName, Tags: []string{}}
			ns.Services = append(ns.Services, svc)
		}
		for _, t := range r.Tags {
			if !slices.Contains(svc.Tags, t) {
				svc.Tags = append(svc.Tags, t)
			}
		}
	}
	for _, n := range out {
		for _, s := range n.Services {
			sort.Strings(s.Tags)
		}
	}
	return out
}

// ServiceRegistrationRestore loads a registration from a snapshot.
func (r *StateRestore) ServiceRegistrationRestore(reg *structs.ServiceRegistration) error {
	return r.insert(TableServiceRegs, reg)
}

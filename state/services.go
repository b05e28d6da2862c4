package state

import (
	"fmt"
	"slices"
	"sort"

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
		if err := b.txn.deleteServicesBy(IndexAlloc, id); err != nil {
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

// deleteServicesBy removes every registration matching args on index.
func (w *writeTxn) deleteServicesBy(index string, args ...any) error {
	if ok, err := w.hasServices(); !ok || err != nil {
		return err
	}
	rows, err := listWrite[structs.ServiceRegistration](w, TableServiceRegs, index, args...)
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

// allocServicesEnd removes the registrations of an allocation that has
// just become terminal (a == nil: deleted). It is called for every
// allocation write, and does nothing unless the allocation has just
// stopped.
func (w *writeTxn) allocServicesEnd(prev, a *structs.Allocation) error {
	switch {
	case a == nil && prev != nil:
		return w.deleteServicesBy(IndexAlloc, prev.ID)
	case a != nil && a.TerminalStatus() && (prev == nil || !prev.TerminalStatus()):
		return w.deleteServicesBy(IndexAlloc, a.ID)
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
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexAlloc, allocID)
}

// ServiceRegistrationsByJobID returns a job's registrations.
func (s *StateStore) ServiceRegistrationsByJobID(ws memdb.WatchSet, namespace, jobID string) ([]*structs.ServiceRegistration, error) {
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexJob, defaultNamespace(namespace), jobID)
}

// ServiceRegistrationsByNodeID returns a node's registrations.
func (s *StateStore) ServiceRegistrationsByNodeID(ws memdb.WatchSet, nodeID string) ([]*structs.ServiceRegistration, error) {
	return listTxn[structs.ServiceRegistration](s.db.Txn(false), ws, TableServiceRegs, IndexNode, nodeID)
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

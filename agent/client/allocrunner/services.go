package allocrunner

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// ServiceRegistrar registers an allocation's native services with the
// servers (the client implements it over RPC with the node's secret).
// Calls may block on the network; the runner makes them from a goroutine
// of its own.
type ServiceRegistrar interface {
	// RegisterServices writes regs (idempotent: the same registration
	// again changes nothing).
	RegisterServices(regs []*structs.ServiceRegistration) error
	// DeregisterServices removes registrations by ID; missing ones are
	// not an error.
	DeregisterServices(namespace string, ids []string) error
	// DeregisterAlloc removes every registration of the allocation.
	DeregisterAlloc(allocID string) error
}

// nodeIPAttr is the node attribute holding the client's address.
const nodeIPAttr = "unique.network.ip-address"

// serviceHook keeps an allocation's registrations (and health checks) in
// step with its tasks: a task's services are registered while it runs,
// the group's while the allocation runs, and every one is removed when
// the allocation ends. A runner has one only when its group declares a
// service. All work happens in loop; kick only signals it.
type serviceHook struct {
	ar   *AllocRunner
	reg  ServiceRegistrar
	kick chan struct{} // capacity 1
	stop chan struct{} // closed by detach
	done chan struct{} // closed when loop returns
	once sync.Once

	// Owned by loop.
	registered map[string]*structs.ServiceRegistration
	reported   map[string]bool // problems already reported, by message
	checks     *checkSet
}

func newServiceHook(ar *AllocRunner, reg ServiceRegistrar) *serviceHook {
	h := &serviceHook{ar: ar, reg: reg, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), registered: map[string]*structs.ServiceRegistration{}, reported: map[string]bool{}}
	h.checks = newCheckSet(ar)
	return h
}

// changed asks the loop to look again.
func (h *serviceHook) changed() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// detach stops the loop without deregistering (client shutdown: a
// restarted client registers the same IDs again).
func (h *serviceHook) detach() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

// loop reconciles on every kick; once the allocation's tasks are all dead
// it deregisters everything and returns.
func (h *serviceHook) loop() {
	defer close(h.done)
	defer h.checks.stopAll()
	bo := backoff.New(time.Second, 30*time.Second)
	var retry <-chan time.Time
	for {
		select {
		case <-h.kick:
		case <-retry:
		case <-h.stop:
			return
		}
		retry = nil
		if h.allocDone() {
			h.checks.stopAll()
			h.final(bo)
			return
		}
		if err := h.reconcile(); err != nil {
			h.ar.logger.Warn("service registration failed; will retry", "error", err)
			retry = time.After(bo.Next())
			continue
		}
		bo.Reset()
	}
}

// allocDone reports whether every task is dead and the runner not
// detached.
func (h *serviceHook) allocDone() bool {
	select {
	case <-h.ar.doneCh:
	default:
		return false
	}
	h.ar.mu.Lock()
	defer h.ar.mu.Unlock()
	return !h.ar.detached
}

// final removes every registration of the allocation, retrying until it
// succeeds or the client shuts down. The servers remove them anyway once
// the allocation is terminal; this is for a registration written after it.
func (h *serviceHook) final(bo *backoff.Backoff) {
	for {
		err := h.reg.DeregisterAlloc(h.ar.id)
		if err == nil {
			return
		}
		h.ar.logger.Warn("service deregistration failed; will retry", "error", err)
		select {
		case <-time.After(bo.Next()):
		case <-h.stop:
			return
		}
	}
}

// reconcile registers what should be and removes what should not.
func (h *serviceHook) reconcile() error {
	want, checks := h.desired()
	var add []*structs.ServiceRegistration
	for id, r := range want {
		if prev, ok := h.registered[id]; !ok || !prev.Equal(r) {
			add = append(add, r)
		}
	}
	var remove []string
	for id := range h.registered {
		if _, ok := want[id]; !ok {
			remove = append(remove, id)
		}
	}
	h.checks.set(checks)
	if len(add) > 0 {
		slices.SortFunc(add, func(a, b *structs.ServiceRegistration) int { return cmpString(a.ID, b.ID) })
		if err := h.reg.RegisterServices(add); err != nil {
			return err
		}
		for _, r := range add {
			h.registered[r.ID] = r
		}
	}
	if len(remove) > 0 {
		slices.Sort(remove)
		if err := h.reg.DeregisterServices(h.ar.alloc.Namespace, remove); err != nil {
			return err
		}
		for _, id := range remove {
			delete(h.registered, id)
		}
	}
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// desired computes the registrations the allocation should have now, and
// the checks to run: each running task's services, and the group's while
// the allocation runs and is not being stopped.
func (h *serviceHook) desired() (map[string]*structs.ServiceRegistration, []*checkSpec) {
	ar := h.ar
	ar.mu.Lock()
	alloc, killing, status := ar.alloc, ar.killing, ar.clientStatus
	ar.mu.Unlock()
	out := map[string]*structs.ServiceRegistration{}
	var checks []*checkSpec
	if alloc.Job == nil {
		return out, nil
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return out, nil
	}
	for _, t := range tg.Tasks {
		if t == nil || len(t.Services) == 0 {
			continue
		}
		tr := ar.tasks[t.Name]
		if tr == nil || tr.killed() || tr.State().State != structs.TaskStateRunning {
			continue // a task being killed is deregistered first
		}
		for _, s := range t.Services {
			if s == nil {
				continue
			}
			r, cs, err := h.build(alloc, tg, t, s, tr)
			if err != nil {
				h.report(tr, err.Error())
				continue
			}
			out[r.ID] = r
			checks = append(checks, cs...)
		}
	}
	if status == structs.AllocClientStatusRunning && !killing {
		for _, s := range tg.Services {
			if s == nil {
				continue
			}
			var tr *taskRunner
			if s.TaskName != "" {
				tr = ar.tasks[s.TaskName]
			}
			r, cs, err := h.build(alloc, tg, nil, s, tr)
			if err != nil {
				h.report(tr, err.Error())
				continue
			}
			out[r.ID] = r
			checks = append(checks, cs...)
		}
	}
	return out, checks
}

// report records a service problem once: a task event on its task (or a
// log line for a group service without one).
func (h *serviceHook) report(tr *taskRunner, msg string) {
	if h.reported[msg] {
		return
	}
	h.reported[msg] = true
	h.ar.logger.Warn("service not registered", "reason", msg)
	if tr != nil {
		ev := newEvent(structs.TaskHookFailed, msg)
		ev.Message = msg
		go tr.update(nil, ev) // update calls back into the runner
	}
}

// build makes the registration of service s of task t (nil: a group
// service) and the specs of its checks.
func (h *serviceHook) build(alloc *structs.Allocation, tg *structs.TaskGroup, t *structs.Task, s *structs.Service,
	tr *taskRunner) (*structs.ServiceRegistration, []*checkSpec, error) {
	te := h.env(alloc, tg, t, tr)
	name := te.replace(s.Name, te.lookupEnv)
	taskName := ""
	if t != nil {
		taskName = t.Name
	}
	addr, port, err := h.address(alloc, s.AddressMode, s.PortLabel)
	if err != nil {
		return nil, nil, fmt.Errorf("service %q: %v", name, err)
	}
	if s.Address != "" {
		addr = te.replace(s.Address, te.lookupEnv)
	}
	var tags []string
	for _, tag := range s.Tags {
		tags = append(tags, te.replace(tag, te.lookupEnv))
	}
	r := &structs.ServiceRegistration{
		ID:          structs.ServiceRegistrationID(alloc.ID, taskName, tg.Name, name, s.PortLabel),
		ServiceName: name, Namespace: alloc.Namespace, NodeID: h.ar.cfg.Node.ID,
		Datacenter: h.ar.cfg.Node.Datacenter, JobID: alloc.JobID, AllocID: alloc.ID,
		Tags: tags, Address: addr, Port: port,
	}
	var specs []*checkSpec
	for _, c := range s.Checks {
		if c == nil {
			continue
		}
		spec, err := h.checkSpec(alloc, tg, t, s, name, c, te)
		if err != nil {
			return nil, nil, fmt.Errorf("service %q check %q: %v", name, c.Name, err)
		}
		specs = append(specs, spec)
	}
	return r, specs, nil
}

// env is the environment names are interpolated in: the task's, or for a
// group service its task's or the group's first task's.
func (h *serviceHook) env(alloc *structs.Allocation, tg *structs.TaskGroup, t *structs.Task, tr *taskRunner) *taskEnv {
	if t == nil {
		if tr != nil {
			t = tr.task
		} else if len(tg.Tasks) > 0 {
			t = tg.Tasks[0]
			tr = h.ar.tasks[t.Name]
		}
	}
	if t == nil || tr == nil {
		return &taskEnv{env: map[string]string{}, node: h.ar.cfg.Node.vars()}
	}
	return buildTaskEnv(alloc, tg, t, h.ar.allocDir, tr.taskDir, h.ar.cfg.Node)
}

// address resolves a port (a label of the allocation's ports, or a port
// number) and address mode to the address and port to advertise:
//
//   - auto and host: the port's host IP (the node's address for a
//     number or no port) and the host port;
//   - alloc: the same address, and the port inside the allocation (To,
//     when it maps one) as Nomad gives in host networking;
//   - driver: refused, as no driver of Drover's has a network of its own.
func (h *serviceHook) address(alloc *structs.Allocation, mode, label string) (string, int, error) {
	nodeIP := h.ar.cfg.Node.Attributes[nodeIPAttr]
	if mode == structs.AddressModeDriver {
		return "", 0, fmt.Errorf("address_mode = \"driver\" needs a driver with a network of its own; the task's driver has none (use auto, host or alloc)")
	}
	if label == "" {
		return nodeIP, 0, nil
	}
	if n, ok := structs.IsNumericPort(label); ok {
		return nodeIP, n, nil
	}
	var m *structs.AllocatedPortMapping
	if r := alloc.AllocatedResources; r != nil {
		for i := range r.Shared.Ports {
			if r.Shared.Ports[i].Label == label {
				m = &r.Shared.Ports[i]
				break
			}
		}
	}
	if m == nil {
		m = legacyTaskPort(alloc.AllocatedResources, label)
	}
	if m == nil {
		return "", 0, fmt.Errorf("port label %q is not among the allocation's ports", label)
	}
	ip := m.HostIP
	if ip == "" {
		ip = nodeIP
	}
	if mode == structs.AddressModeAlloc && m.To > 0 {
		return ip, m.To, nil
	}
	return ip, m.Value, nil
}

// checkAddress is where a check connects: the check's own port and mode,
// or the service's.
func (h *serviceHook) checkAddress(alloc *structs.Allocation, s *structs.Service, c *structs.ServiceCheck) (string, int, error) {
	label, mode := c.PortLabel, c.AddressMode
	if label == "" {
		label = s.PortLabel
	}
	if mode == "" {
		mode = s.AddressMode
	}
	if mode == "" || mode == structs.AddressModeAuto {
		mode = structs.AddressModeHost
	}
	addr, port, err := h.address(alloc, mode, label)
	if err == nil && c.PortLabel == "" && s.Address != "" {
		addr = s.Address
	}
	return addr, port, err
}

// legacyTaskPort finds label among the ports of the tasks' legacy network
// blocks (resources { network }), which a task's services may name as in
// Nomad; nil when none has it. Port labels are unique in an allocation.
func legacyTaskPort(r *structs.AllocatedResources, label string) *structs.AllocatedPortMapping {
	if r == nil {
		return nil
	}
	for _, t := range r.Tasks {
		for _, n := range t.Networks {
			if n == nil {
				continue
			}
			for _, list := range [][]structs.Port{n.ReservedPorts, n.DynamicPorts} {
				for _, p := range list {
					if p.Label == label {
						return &structs.AllocatedPortMapping{Label: p.Label, Value: p.Value, To: p.To, HostIP: n.IP}
					}
				}
			}
		}
	}
	return nil
}

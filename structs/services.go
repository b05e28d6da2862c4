package structs

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Services and health checks, in Nomad's shapes and JSON names. A service
// block (on a group or a task) asks the client to register the allocation's
// address under a name in the cluster's own catalogue (provider "nomad";
// Consul is not built) and to run its checks. A change to a service is an
// in-place update, as in Nomad: the client re-registers.

// Service providers.
const (
	ServiceProviderNomad  = "nomad"
	ServiceProviderConsul = "consul" // Nomad's default; refused by Drover
)

// Check types.
const (
	ServiceCheckHTTP   = "http"
	ServiceCheckTCP    = "tcp"
	ServiceCheckScript = "script"
	ServiceCheckGRPC   = "grpc" // Consul only; refused
)

// Address modes of a service or check.
const (
	AddressModeAuto      = "auto"
	AddressModeHost      = "host"
	AddressModeDriver    = "driver"
	AddressModeAlloc     = "alloc"
	AddressModeAllocIPv6 = "alloc_ipv6"
)

// on_update values; Drover builds only the default (it has no deployments
// for the others to change).
const (
	OnUpdateRequireHealthy = "require_healthy"
	OnUpdateIgnoreWarn     = "ignore_warnings"
	OnUpdateIgnore         = "ignore"
)

// Check statuses (Consul's words, as Nomad uses them).
const (
	CheckPassing  = "passing"
	CheckWarning  = "warning"
	CheckCritical = "critical"
)

// Statuses of Nomad's checks (CheckQueryResult.Status); warning is
// Drover's, for a script check that exits 1.
const (
	CheckStatusSuccess = "success"
	CheckStatusFailure = "failure"
	CheckStatusPending = "pending"
	CheckStatusWarning = "warning"
)

// Check modes: a healthiness check's result is the allocation's health; a
// readiness check's (on_update = "ignore") is only shown.
const (
	CheckModeHealthiness = "healthiness"
	CheckModeReadiness   = "readiness"
)

// CheckQueryResult is a check's latest result, in the shape of Nomad's
// GET /v1/client/allocation/<id>/checks (a map of check ID to result).
type CheckQueryResult struct {
	ID         string
	Mode       string
	Status     string
	StatusCode int `json:",omitempty"`
	Output     string
	Timestamp  int64
	Group      string
	Task       string `json:",omitempty"`
	Service    string
	Check      string
}

// Check bounds, Nomad's.
const (
	MinCheckInterval = time.Second
	MinCheckTimeout  = time.Second
	// DefaultCheckRestartGrace is check_restart's grace when unset.
	DefaultCheckRestartGrace = time.Second
	maxServicesPerBlock      = 100
	maxChecksPerService      = 100
)

// Service is one service block. CheckRestart is the service-level
// check_restart, which Canonicalize lays under each check's own (Nomad's
// server keeps only the checks' copies; Drover keeps this one as sent so
// that a job reads back as it was written).
type Service struct {
	Name         string
	TaskName     string
	PortLabel    string
	AddressMode  string
	Address      string
	Tags         []string
	Checks       []*ServiceCheck
	CheckRestart *CheckRestart
	Meta         map[string]string
	OnUpdate     string
	Provider     string
}

// ServiceCheck is one check block of a service.
type ServiceCheck struct {
	Name                   string
	Type                   string
	Command                string
	Args                   []string
	Path                   string
	Protocol               string
	PortLabel              string
	AddressMode            string
	Interval               time.Duration
	Timeout                time.Duration
	InitialStatus          string
	TLSSkipVerify          bool
	Method                 string
	Header                 map[string][]string
	Body                   string
	CheckRestart           *CheckRestart
	TaskName               string
	SuccessBeforePassing   int
	FailuresBeforeCritical int
	OnUpdate               string
}

// CheckRestart restarts a task whose check has been unhealthy Limit times
// in a row, after Grace from the task's start.
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// TriggersRestarts reports whether a failing check restarts its task.
func (sc *ServiceCheck) TriggersRestarts() bool {
	return sc.CheckRestart != nil && sc.CheckRestart.Limit > 0
}

// HasServices reports whether any of the group's or its tasks' blocks
// declare a service.
func (tg *TaskGroup) HasServices() bool {
	if len(tg.Services) > 0 {
		return true
	}
	for _, t := range tg.Tasks {
		if t != nil && len(t.Services) > 0 {
			return true
		}
	}
	return false
}

// canonicalizeServices gives the services of a group (task == "") or a
// task Nomad's server defaults: a name from the job, group and task, the
// ${JOB}/${TASKGROUP}/${TASK}/${BASE} names interpolated, address mode
// auto, on_update require_healthy, provider consul (which Validate then
// refuses), the task name on task services and their checks, check names,
// and the service's check_restart under each check's.
func canonicalizeServices(svcs []*Service, job, group, task string) {
	for _, s := range svcs {
		if s == nil {
			continue
		}
		if s.Name == "" {
			if task != "" {
				s.Name = job + "-" + group + "-" + task
			} else {
				s.Name = job + "-" + group
			}
		}
		s.Name = interpolateServiceName(s.Name, job, group, task)
		if len(s.Tags) == 0 {
			s.Tags = nil
		}
		if len(s.Checks) == 0 {
			s.Checks = nil
		}
		if s.TaskName == "" && task != "" {
			s.TaskName = task
		}
		if s.AddressMode == "" {
			s.AddressMode = AddressModeAuto
		}
		if s.OnUpdate == "" {
			s.OnUpdate = OnUpdateRequireHealthy
		}
		if s.Provider == "" {
			s.Provider = ServiceProviderConsul
		}
		for _, c := range s.Checks {
			if c == nil {
				continue
			}
			if len(c.Args) == 0 {
				c.Args = nil
			}
			if len(c.Header) == 0 {
				c.Header = nil
			}
			if c.Name == "" {
				c.Name = fmt.Sprintf("service: %q check", s.Name)
			}
			if c.TaskName == "" && task != "" {
				c.TaskName = task
			}
			if c.OnUpdate == "" {
				c.OnUpdate = s.OnUpdate
			}
			c.CheckRestart = mergeCheckRestart(s.CheckRestart, c.CheckRestart)
		}
	}
}

// mergeCheckRestart lays a check's check_restart over its service's, as
// Nomad's API canonicalization does (a check's non-zero values win), with
// the default grace.
func mergeCheckRestart(svc, check *CheckRestart) *CheckRestart {
	if svc == nil && check == nil {
		return nil
	}
	var out CheckRestart
	if svc != nil {
		out = *svc
	}
	if check != nil {
		if check.Limit > 0 {
			out.Limit = check.Limit
		}
		if check.Grace != 0 {
			out.Grace = check.Grace
		}
		if check.IgnoreWarnings {
			out.IgnoreWarnings = true
		}
	}
	if out.Grace == 0 {
		out.Grace = DefaultCheckRestartGrace
	}
	return &out
}

// interpolateServiceName replaces the names a service name may hold, the
// runtime ones (${NOMAD_JOB_NAME}, ...) included since they are known at
// registration, and Nomad's legacy ${JOB}, ${TASKGROUP}, ${TASK}, ${BASE}.
func interpolateServiceName(name, job, group, task string) string {
	if !strings.Contains(name, "${") {
		return name
	}
	r := strings.NewReplacer(
		"${JOB}", job, "${TASKGROUP}", group, "${TASK}", task,
		"${BASE}", job+"-"+group+"-"+task,
		"${NOMAD_JOB_NAME}", job, "${NOMAD_GROUP_NAME}", group, "${NOMAD_TASK_NAME}", task,
	)
	return r.Replace(name)
}

var (
	serviceNameRe = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9\-]{0,61}[a-z0-9])$`)
	envVarRe      = regexp.MustCompile(`\$\{[^}]*\}`)
)

// validateServices checks a group's services (tasks == the group's tasks,
// task == "") or a task's (task set).
func validateServices(v *validator, p string, svcs []*Service, tasks []*Task, task string) {
	if len(svcs) > maxServicesPerBlock {
		v.add(p, "at most %d services; got %d", maxServicesPerBlock, len(svcs))
		return
	}
	for i, s := range svcs {
		sp := indexed(p, i)
		if s == nil {
			v.add(sp, "must not be null")
			continue
		}
		validateService(v, sp, s, tasks, task)
	}
}

func validateService(v *validator, sp string, s *Service, tasks []*Task, task string) {
	// A name may still hold a variable the client fills in; check the rest.
	if stripped := envVarRe.ReplaceAllString(s.Name, "ENV-VAR"); !serviceNameRe.MatchString(stripped) {
		v.add(join(sp, "Name"), "service name %q must be valid per RFC 1123: letters, digits and dashes, at most 63 characters, not starting or ending with a dash", s.Name)
	}
	switch s.Provider {
	case ServiceProviderNomad:
	case ServiceProviderConsul:
		v.add(join(sp, "Provider"), "%sConsul services (provider = \"consul\", Nomad's default when provider is absent); set provider = \"nomad\"", unsupported)
		return
	default:
		v.add(join(sp, "Provider"), "%sthe service provider %q; the provider must be \"nomad\"", unsupported, s.Provider)
		return
	}
	switch s.AddressMode {
	case AddressModeAuto:
	case AddressModeHost, AddressModeAlloc, AddressModeDriver:
		if s.Address != "" {
			v.add(join(sp, "Address"), "address_mode must be %q when address is set; got %q", AddressModeAuto, s.AddressMode)
		}
		if s.AddressMode == AddressModeDriver && task == "" {
			v.add(join(sp, "AddressMode"), "a group service cannot use address_mode \"driver\"; only services in a task block can")
		}
	case AddressModeAllocIPv6:
		v.add(join(sp, "AddressMode"), "%saddress_mode %q", unsupported, s.AddressMode)
	default:
		v.add(join(sp, "AddressMode"), "must be %q, %q, %q or %q; got %q", AddressModeAuto, AddressModeHost, AddressModeAlloc, AddressModeDriver, s.AddressMode)
	}
	validateOnUpdate(v, join(sp, "OnUpdate"), s.OnUpdate)
	validateMeta(v, join(sp, "Meta"), s.Meta)
	if task == "" && s.TaskName != "" && !hasTask(tasks, s.TaskName) {
		v.add(join(sp, "TaskName"), "the group has no task %q", s.TaskName)
	}
	if task != "" && s.TaskName != task {
		v.add(join(sp, "TaskName"), "a task's service belongs to its task %q; got %q", task, s.TaskName)
	}
	if len(s.Checks) > maxChecksPerService {
		v.add(join(sp, "Checks"), "at most %d checks per service; got %d", maxChecksPerService, len(s.Checks))
		return
	}
	seen := map[string]int{}
	for j, c := range s.Checks {
		cp := join(sp, indexed("Checks", j))
		if c == nil {
			v.add(cp, "must not be null")
			continue
		}
		if prev, ok := seen[c.Name]; ok {
			v.add(join(cp, "Name"), "duplicate check name %q (also Checks[%d])", c.Name, prev)
		}
		seen[c.Name] = j
		validateCheck(v, cp, s, c, tasks, task)
	}
}

func hasTask(tasks []*Task, name string) bool {
	for _, t := range tasks {
		if t != nil && t.Name == name {
			return true
		}
	}
	return false
}

const unsupported = "Drover does not support "

func validateOnUpdate(v *validator, p, onUpdate string) {
	switch onUpdate {
	case OnUpdateRequireHealthy:
	case OnUpdateIgnore, OnUpdateIgnoreWarn:
		v.add(p, "%son_update = %q (Drover has no deployments for it to change; the default %q is built)", unsupported, onUpdate, OnUpdateRequireHealthy)
	default:
		v.add(p, "must be %q, %q or %q; got %q", OnUpdateRequireHealthy, OnUpdateIgnoreWarn, OnUpdateIgnore, onUpdate)
	}
}

func validateCheck(v *validator, cp string, s *Service, c *ServiceCheck, tasks []*Task, task string) {
	switch strings.ToLower(c.Type) {
	case ServiceCheckHTTP:
		if c.Path == "" {
			v.add(join(cp, "Path"), "an http check needs a path")
		} else if u, err := url.Parse(c.Path); err != nil {
			v.add(join(cp, "Path"), "invalid http path %q: %v", c.Path, err)
		} else if u.IsAbs() {
			v.add(join(cp, "Path"), "an http check's path must be relative; got %q", c.Path)
		}
		if c.Method != "" && !validHTTPMethod(c.Method) {
			v.add(join(cp, "Method"), "unknown HTTP method %q", c.Method)
		}
		switch c.Protocol {
		case "", "http", "https":
		default:
			v.add(join(cp, "Protocol"), "must be \"http\" or \"https\"; got %q", c.Protocol)
		}
	case ServiceCheckTCP:
	case ServiceCheckScript:
		if c.Command == "" {
			v.add(join(cp, "Command"), "a script check needs a command")
		}
		if task == "" && c.TaskName == "" {
			v.add(join(cp, "TaskName"), "a group service's script check must name the task it runs in (task = ...)")
		}
	case ServiceCheckGRPC:
		v.add(join(cp, "Type"), "%sgrpc checks (Consul only)", unsupported)
		return
	default:
		v.add(join(cp, "Type"), "invalid check type %q; must be one of http, tcp, script", c.Type)
		return
	}
	if c.Type != ServiceCheckScript && s.PortLabel == "" && c.PortLabel == "" {
		v.add(join(cp, "PortLabel"), "a %s check needs a port, but neither the check nor service %q has one", c.Type, s.Name)
	}
	switch {
	case c.Interval == 0:
		v.add(join(cp, "Interval"), "must be set (at least %s)", MinCheckInterval)
	case c.Interval < MinCheckInterval:
		v.add(join(cp, "Interval"), "must be at least %s; got %s", MinCheckInterval, c.Interval)
	}
	switch {
	case c.Timeout == 0:
		v.add(join(cp, "Timeout"), "must be set (at least %s)", MinCheckTimeout)
	case c.Timeout < MinCheckTimeout:
		v.add(join(cp, "Timeout"), "must be at least %s; got %s", MinCheckTimeout, c.Timeout)
	}
	switch c.InitialStatus {
	case "", CheckPassing, CheckWarning, CheckCritical:
	default:
		v.add(join(cp, "InitialStatus"), "must be %q, %q, %q or empty; got %q", CheckPassing, CheckWarning, CheckCritical, c.InitialStatus)
	}
	switch c.AddressMode {
	case "", AddressModeHost, AddressModeAlloc:
	case AddressModeDriver:
		v.add(join(cp, "AddressMode"), "%saddress_mode \"driver\" on a check (Nomad allows it for Consul checks only)", unsupported)
	case AddressModeAuto:
		v.add(join(cp, "AddressMode"), "address_mode %q is valid only on services", AddressModeAuto)
	default:
		v.add(join(cp, "AddressMode"), "must be empty, %q or %q; got %q", AddressModeHost, AddressModeAlloc, c.AddressMode)
	}
	validateOnUpdate(v, join(cp, "OnUpdate"), c.OnUpdate)
	if c.SuccessBeforePassing < 0 {
		v.add(join(cp, "SuccessBeforePassing"), "must not be negative")
	}
	if c.FailuresBeforeCritical < 0 {
		v.add(join(cp, "FailuresBeforeCritical"), "must not be negative")
	}
	if cr := c.CheckRestart; cr != nil {
		if cr.Limit < 0 {
			v.add(join(cp, "CheckRestart.Limit"), "must not be negative")
		}
		if cr.Grace < 0 {
			v.add(join(cp, "CheckRestart.Grace"), "must not be negative")
		}
	}
	if c.TaskName != "" {
		if task != "" && c.TaskName != task {
			v.add(join(cp, "TaskName"), "only a group service's checks may name a task; got %q", c.TaskName)
		} else if task == "" && !hasTask(tasks, c.TaskName) {
			v.add(join(cp, "TaskName"), "the group has no task %q", c.TaskName)
		}
	}
}

func validHTTPMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// validateServiceNames refuses two services of a group (its own and its
// tasks') with the same name and port, as Nomad does.
func (tg *TaskGroup) validateServiceNames(v *validator, p string) {
	seen := map[string]string{}
	check := func(sp string, s *Service) {
		if s == nil {
			return
		}
		key := s.Name + "\x00" + s.PortLabel
		if prev, ok := seen[key]; ok {
			v.add(join(sp, "Name"), "duplicate service %q on port %q (also %s)", s.Name, s.PortLabel, prev)
			return
		}
		seen[key] = sp
	}
	for i, t := range tg.Tasks {
		if t == nil {
			continue
		}
		for j, s := range t.Services {
			check(join(join(p, indexed("Tasks", i)), indexed("Services", j)), s)
		}
	}
	for j, s := range tg.Services {
		check(join(p, indexed("Services", j)), s)
	}
}

// validateServicePorts refuses a service or check port that is neither a
// port number nor a label of the group's network block (or, for a task's
// service, of the task's legacy network block), as Nomad does.
func (tg *TaskGroup) validateServicePorts(v *validator, p string) {
	if !tg.HasServices() {
		return
	}
	labels := map[string]bool{}
	for _, n := range tg.Networks {
		if n == nil {
			continue
		}
		for _, port := range append(append([]Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
			labels[port.Label] = true
		}
	}
	check := func(fp, label string) {
		if label == "" || labels[label] {
			return
		}
		if _, ok := IsNumericPort(label); ok {
			return
		}
		v.add(fp, "port label %q is not defined in the group's network block", label)
	}
	each := func(sp string, svcs []*Service) {
		for i, s := range svcs {
			if s == nil {
				continue
			}
			spi := join(sp, indexed("Services", i))
			check(join(spi, "PortLabel"), s.PortLabel)
			for j, c := range s.Checks {
				if c != nil {
					check(join(join(spi, indexed("Checks", j)), "PortLabel"), c.PortLabel)
				}
			}
		}
	}
	each(p, tg.Services)
	for i, t := range tg.Tasks {
		if t == nil || len(t.Services) == 0 {
			continue
		}
		// A task's services may also name its legacy network's ports.
		var own []string
		if t.Resources != nil {
			for _, n := range t.Resources.Networks {
				if n == nil {
					continue
				}
				for _, port := range append(append([]Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
					if !labels[port.Label] {
						labels[port.Label] = true
						own = append(own, port.Label)
					}
				}
			}
		}
		each(join(p, indexed("Tasks", i)), t.Services)
		for _, l := range own {
			delete(labels, l)
		}
	}
}

// IsNumericPort reports whether a port label is a port number literal,
// which Nomad accepts in a service's port.
func IsNumericPort(label string) (int, bool) {
	n, err := strconv.Atoi(label)
	if err != nil || n <= 0 || n > MaxValidPort {
		return 0, false
	}
	return n, true
}

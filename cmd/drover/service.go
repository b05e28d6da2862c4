package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func serviceCommands() []*command {
	return []*command{
		{name: "service list", synopsis: "Display all registered Nomad services", run: runServiceList},
		{name: "service info", synopsis: "Display an individual Nomad service registration", run: runServiceInfo},
		{name: "service delete", synopsis: "Deregister a registered Nomad service", run: runServiceDelete},
	}
}

// serviceListTable prints Nomad's service list table: a Namespace column
// only for the wildcard namespace, tags sorted in brackets.
func serviceListTable(w io.Writer, list []*structs.ServiceRegistrationListStub, allNamespaces bool) {
	sort.Slice(list, func(i, j int) bool { return list[i].Namespace < list[j].Namespace })
	t := newTable(w)
	if allNamespaces {
		t.row("Service Name", "Namespace", "Tags")
	} else {
		t.row("Service Name", "Tags")
	}
	for _, ns := range list {
		svcs := ns.Services
		sort.Slice(svcs, func(i, j int) bool { return svcs[i].ServiceName < svcs[j].ServiceName })
		for _, s := range svcs {
			tags := append([]string(nil), s.Tags...)
			sort.Strings(tags)
			cell := "[" + strings.Join(tags, ",") + "]"
			if allNamespaces {
				t.row(s.ServiceName, ns.Namespace, cell)
			} else {
				t.row(s.ServiceName, cell)
			}
		}
	}
	t.flush()
}

func runServiceList(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	var namespace string
	fs := newFlagSet(e, "service list", "[options]", "List the registered services.")
	af.register(fs, e)
	fs.StringVar(&namespace, "namespace", e.getenv("NOMAD_NAMESPACE"), "the namespace (\"*\" for all)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	list, _, err := af.client().Services(context.Background(), &api.QueryOptions{Namespace: namespace})
	if err != nil {
		return errorf(e, "listing service registrations: %v", err)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No service registrations found")
		return exitOK
	}
	if asJSON {
		return printJSON(e, list)
	}
	serviceListTable(e.stdout, list, namespace == "*")
	return exitOK
}

func runServiceInfo(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	var namespace string
	fs := newFlagSet(e, "service info", "[options] <service_name>",
		"Show the registrations of one service (a name or a unique prefix).")
	af.register(fs, e)
	fs.StringVar(&namespace, "namespace", e.getenv("NOMAD_NAMESPACE"), "the namespace (\"*\" for all)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show every field and full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "This command takes one argument: <service_name>")
	}
	c := af.client()
	ctx := context.Background()
	name := fs.Arg(0)
	list, _, err := c.Services(ctx, &api.QueryOptions{Namespace: namespace, Prefix: name})
	if err != nil {
		return errorf(e, "listing service registrations: %v", err)
	}
	// A name matches exactly, or is the prefix of exactly one name.
	type match struct{ ns, name string }
	var found []match
	for _, n := range list {
		for _, svc := range n.Services {
			if svc.ServiceName == name {
				found = []match{{n.Namespace, name}}
				break
			}
			found = append(found, match{n.Namespace, svc.ServiceName})
		}
		if len(found) == 1 && found[0].name == name {
			break
		}
	}
	switch {
	case len(found) == 0:
		fmt.Fprintf(e.stderr, "No service registrations with prefix %q found\n", name)
		return exitError
	case len(found) > 1:
		var b strings.Builder
		serviceListTable(&b, list, namespace == "*")
		fmt.Fprintf(e.stderr, "Prefix matched multiple services\n\n%s", b.String())
		return exitError
	}
	ns, svc := found[0].ns, found[0].name
	regs, _, err := c.Service(ctx, svc, &api.QueryOptions{Namespace: ns})
	if err != nil {
		return errorf(e, "listing service registrations: %v", err)
	}
	if len(regs) == 0 {
		fmt.Fprintln(e.stdout, "No service registrations found")
		return exitOK
	}
	if asJSON {
		return printJSON(e, regs)
	}
	// Several jobs may register one name: ordered by job ID, as Nomad.
	sort.SliceStable(regs, func(i, j int) bool { return regs[i].JobID < regs[j].JobID })
	if verbose {
		for _, r := range regs {
			kv(e.stdout, "ID", r.ID, "Service Name", r.ServiceName, "Namespace", r.Namespace, "Job ID", r.JobID,
				"Alloc ID", r.AllocID, "Node ID", r.NodeID, "Datacenter", r.Datacenter,
				"Address", r.Address+":"+strconv.Itoa(r.Port), "Tags", "["+strings.Join(r.Tags, ",")+"]")
			fmt.Fprintln(e.stdout)
		}
		return exitOK
	}
	t := newTable(e.stdout)
	t.row("Job ID", "Address", "Tags", "Node ID", "Alloc ID")
	for _, r := range regs {
		t.row(r.JobID, serviceAddress(r.Address, r.Port), "["+strings.Join(r.Tags, ",")+"]",
			shortID(r.NodeID, false), shortID(r.AllocID, false))
	}
	t.flush()
	return exitOK
}

// serviceAddress is host:port (IPv6 in brackets), or the address alone
// without a port.
func serviceAddress(addr string, port int) string {
	if port == 0 {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

func runServiceDelete(e *env, args []string) int {
	var af apiFlags
	var namespace string
	fs := newFlagSet(e, "service delete", "[options] <service_name> <service_id>",
		"Delete one registration of a service (its client registers it again while the allocation runs).")
	af.register(fs, e)
	fs.StringVar(&namespace, "namespace", e.getenv("NOMAD_NAMESPACE"), "the namespace")
	if code, ok := parseFlags(fs, args, 2); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return usagef(e, "This command takes two arguments: <service_name> and <service_id>")
	}
	if _, err := af.client().DeleteService(context.Background(), fs.Arg(0), fs.Arg(1), &api.WriteOptions{Namespace: namespace}); err != nil {
		return errorf(e, "deleting service registration: %v", err)
	}
	fmt.Fprintln(e.stdout, "Successfully deleted service registration")
	return exitOK
}

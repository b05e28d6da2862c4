package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func nodePoolCommands() []*command {
	return []*command{
		{name: "node pool apply", synopsis: "Create or update a node pool from a specification file", run: runNodePoolApply},
		{name: "node pool list", synopsis: "List node pools", run: runNodePoolList},
		{name: "node pool info", synopsis: "Show a node pool", run: runNodePoolInfo},
		{name: "node pool nodes", synopsis: "List the nodes of a node pool", run: runNodePoolNodes},
		{name: "node pool jobs", synopsis: "List the jobs of a node pool", run: runNodePoolJobs},
		{name: "node pool delete", synopsis: "Delete a node pool", run: runNodePoolDelete},
	}
}

func runNodePoolApply(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "node pool apply", "[options] <file>",
		`Create or update the node pool a file specifies: HCL (node_pool "name" { description = "..." meta { k = "v" } }) or, with -json, api.NodePool's JSON. "-" reads standard input.`)
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "the file is JSON")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool specification file")
	}
	path := fs.Arg(0)
	src, err := readFileOrStdin(e, path)
	if err != nil {
		return errorf(e, "reading %s: %v", path, err)
	}
	var pool *structs.NodePool
	if asJSON {
		pool = new(structs.NodePool)
		err = json.Unmarshal(src, pool)
	} else {
		pool, err = parseNodePoolHCL(src, path)
	}
	if err != nil {
		return errorf(e, "parsing %s: %v", path, err)
	}
	if _, err := af.client().RegisterNodePool(context.Background(), pool, nil); err != nil {
		return errorf(e, "applying node pool: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully applied node pool %q!\n", pool.Name)
	return exitOK
}

// parseNodePoolHCL reads one node_pool block: description and meta.
// Nomad's scheduler_config and node_identity_ttl are refused by name.
func parseNodePoolHCL(src []byte, path string) (*structs.NodePool, error) {
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body := f.Body.(*hclsyntax.Body)
	if len(body.Attributes) > 0 || len(body.Blocks) != 1 || body.Blocks[0].Type != "node_pool" || len(body.Blocks[0].Labels) != 1 {
		return nil, fmt.Errorf(`want exactly one node_pool "<name>" block`)
	}
	blk := body.Blocks[0]
	pool := &structs.NodePool{Name: blk.Labels[0]}
	for name, a := range blk.Body.Attributes {
		switch name {
		case "description":
			v, d := a.Expr.Value(nil)
			if d.HasErrors() || v.Type() != cty.String || v.IsNull() {
				return nil, fmt.Errorf("%s: description must be a string", a.SrcRange)
			}
			pool.Description = v.AsString()
		case "node_identity_ttl":
			return nil, fmt.Errorf("%s: node_identity_ttl: Drover does not support node identities", a.SrcRange)
		default:
			return nil, fmt.Errorf("%s: unexpected argument %q in node_pool", a.SrcRange, name)
		}
	}
	for _, b := range blk.Body.Blocks {
		switch b.Type {
		case "meta":
			attrs, d := b.Body.JustAttributes()
			if d.HasErrors() {
				return nil, d
			}
			pool.Meta = map[string]string{}
			for k, a := range attrs {
				v, d := a.Expr.Value(nil)
				if d.HasErrors() || v.Type() != cty.String || v.IsNull() {
					return nil, fmt.Errorf("%s: meta %q must be a string", a.Range, k)
				}
				pool.Meta[k] = v.AsString()
			}
		case "scheduler_config":
			return nil, fmt.Errorf("%s: scheduler_config: Drover does not support a scheduler configuration per node pool (Nomad Enterprise)", b.TypeRange)
		default:
			return nil, fmt.Errorf("%s: unexpected block %q in node_pool", b.TypeRange, b.Type)
		}
	}
	return pool, nil
}

func runNodePoolList(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "node pool list", "[options]", "List the node pools, built-in ones included.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	pools, _, err := af.client().NodePools(context.Background(), nil)
	if err != nil {
		return errorf(e, "retrieving node pools: %v", err)
	}
	if asJSON {
		return printJSON(e, pools)
	}
	t := newTable(e.stdout)
	t.row("Name", "Description")
	for _, p := range pools {
		t.row(p.Name, p.Description)
	}
	t.flush()
	return exitOK
}

func runNodePoolInfo(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "node pool info", "[options] <pool>", "Show a node pool and its metadata.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	pool, _, err := af.client().NodePool(context.Background(), fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving node pool: %v", err)
	}
	if asJSON {
		return printJSON(e, pool)
	}
	kv(e.stdout, "Name", pool.Name, "Description", pool.Description)
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "Metadata")
	if len(pool.Meta) == 0 {
		fmt.Fprintln(e.stdout, "No metadata")
		return exitOK
	}
	keys := make([]string, 0, len(pool.Meta))
	for k := range pool.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, k, pool.Meta[k])
	}
	kv(e.stdout, pairs...)
	return exitOK
}

func runNodePoolNodes(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "node pool nodes", "[options] <pool>", `List the nodes of a node pool ("all": every node).`)
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	nodes, _, err := af.client().NodePoolNodes(context.Background(), fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving node pool nodes: %v", err)
	}
	if asJSON {
		return printJSON(e, nodes)
	}
	if len(nodes) == 0 {
		fmt.Fprintln(e.stdout, "No nodes")
		return exitOK
	}
	nodeTable(e.stdout, nodes, verbose)
	return exitOK
}

func runNodePoolJobs(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	var namespace string
	fs := newFlagSet(e, "node pool jobs", "[options] <pool>", "List the jobs of a node pool.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&namespace, "namespace", "", `the jobs' namespace ("*": all)`)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	jobs, _, err := af.client().NodePoolJobs(context.Background(), fs.Arg(0), &api.QueryOptions{Namespace: namespace})
	if err != nil {
		return errorf(e, "retrieving node pool jobs: %v", err)
	}
	if asJSON {
		return printJSON(e, jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(e.stdout, "No jobs")
		return exitOK
	}
	jobTable(e, e.stdout, jobs)
	return exitOK
}

func runNodePoolDelete(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "node pool delete", "[options] <pool>", "Delete a node pool no node or job uses.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	if _, err := af.client().DeleteNodePool(context.Background(), fs.Arg(0), nil); err != nil {
		return errorf(e, "deleting node pool: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully deleted node pool %q!\n", fs.Arg(0))
	return exitOK
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// The var commands (Nomad's nomad var put|get|list|purge) and the
// keyring's (nomad operator root keyring list|rotate).

func varCommands() []*command {
	return []*command{
		{name: "var put", synopsis: "Create or update a variable", run: runVarPut},
		{name: "var get", synopsis: "Read a variable", run: runVarGet},
		{name: "var list", synopsis: "List variable metadata", run: runVarList},
		{name: "var purge", synopsis: "Purge a variable", run: runVarPurge},
		{name: "operator root keyring list", synopsis: "List the keyring's root keys", run: runKeyringList},
		{name: "operator root keyring rotate", synopsis: "Make a new active root key", run: runKeyringRotate},
	}
}

// nsFlag registers Nomad's -namespace flag (env NOMAD_NAMESPACE).
func nsFlag(fs *flag.FlagSet, e *env) *string {
	def := e.getenv("DROVER_NAMESPACE")
	if def == "" {
		def = e.getenv("NOMAD_NAMESPACE")
	}
	return fs.String("namespace", def, "the namespace (env DROVER_NAMESPACE, then NOMAD_NAMESPACE; default \"default\")")
}

// cliVariable is a variable in Nomad's api.Variable field order, for
// -out json, hcl and go-template.
type cliVariable struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	ModifyIndex uint64
	CreateTime  int64
	ModifyTime  int64
	Items       structs.VariableItems
}

func toCLIVariable(v *structs.VariableDecrypted) *cliVariable {
	return &cliVariable{Namespace: v.Namespace, Path: v.Path, CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex,
		CreateTime: v.CreateTime, ModifyTime: v.ModifyTime, Items: v.Items}
}

// stdoutIsTerminal reports whether e.stdout is a terminal (Nomad picks
// the default -out from it).
func stdoutIsTerminal(e *env) bool {
	f, ok := e.stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

const varHCLTemplate = `
namespace    = "{{.Namespace}}"
path         = "{{.Path}}"
create_index = {{.CreateIndex}}  # Set by server
modify_index = {{.ModifyIndex}}  # Set by server; consulted for check-and-set
create_time  = {{.CreateTime}}   # Set by server
modify_time  = {{.ModifyTime}}   # Set by server

items = {
{{- $PAD := 0 -}}{{- range $k,$v := .Items}}{{if gt (len $k) $PAD}}{{$PAD = (len $k)}}{{end}}{{end -}}
{{- $FMT := printf "  %%%vs = %%q\n" $PAD}}
{{range $k,$v := .Items}}{{printf $FMT $k $v}}{{ end -}}
}
`

// checkOutFormat checks -out and -template as Nomad does.
func checkOutFormat(out, tmpl string) error {
	if out != "go-template" && tmpl != "" {
		return errors.New("The '-template' flag is only valid when using 'go-template' formatting")
	}
	switch out {
	case "none", "json", "hcl", "table":
		return nil
	case "go-template":
		if tmpl == "" {
			return errors.New("A template must be supplied using '-template' when using go-template formatting")
		}
		return nil
	}
	return errors.New(`Invalid value for "-out"; valid values are [go-template, hcl, json, none, table]`)
}

// renderVariable writes v as -out asks; "none" writes nothing.
func renderVariable(e *env, v *structs.VariableDecrypted, out, tmpl string) error {
	cv := toCLIVariable(v)
	switch out {
	case "json":
		buf, err := json.MarshalIndent(cv, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, string(buf))
	case "hcl", "go-template":
		if out == "hcl" {
			tmpl = varHCLTemplate
		}
		t, err := template.New("var").Parse(tmpl)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, cv); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, b.String())
	case "table":
		pairs := []string{"Namespace", v.Namespace, "Path", v.Path, "Create Time", e.formatUnixNano(v.CreateTime)}
		if v.CreateTime != v.ModifyTime {
			pairs = append(pairs, "Modify Time", e.formatUnixNano(v.ModifyTime))
		}
		pairs = append(pairs, "Check Index", strconv.FormatUint(v.ModifyIndex, 10))
		kv(e.stdout, pairs...)
		fmt.Fprintln(e.stdout, "\nItems")
		keys := make([]string, 0, len(v.Items))
		for k := range v.Items {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		items := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			items = append(items, k, v.Items[k])
		}
		kv(e.stdout, items...)
	}
	return nil
}

// casConflict prints Nomad's check-and-set message; false if err is not
// a conflict.
func casConflict(e *env, err error) bool {
	var ce *api.CASConflictError
	if !errors.As(err, &ce) {
		return false
	}
	fmt.Fprintln(e.stderr, "\nCheck-and-Set conflict")
	fmt.Fprintf(e.stderr, "\n    Your provided check-index (%d) does not match the server-side index (%d).\n", ce.CheckIndex, ce.Conflict.ModifyIndex)
	if ce.Conflict.ModifyIndex > 0 {
		fmt.Fprintf(e.stderr, "    The server-side item was last updated on %s.\n", e.formatUnixNano(ce.Conflict.ModifyTime))
	}
	fmt.Fprintf(e.stderr, "    If you are sure you want to perform this operation, add the -force or\n    -check-index=%d flag before the positional arguments.\n\n", ce.Conflict.ModifyIndex)
	return true
}

// parseCheckIndex reads -check-index: set or not, and its value.
func parseCheckIndex(s string) (uint64, bool, error) {
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil, err
}

func runVarPut(e *env, args []string) int {
	var af apiFlags
	var force, verbose bool
	var checkIndex, in, out, tmpl string
	fs := newFlagSet(e, "var put", "[options] <path> [<key>=<value>]...  |  [options] <@spec file | -> [<key>=<value>]...",
		"Create or update a variable. Items come from a specification (a JSON file given as @file, or \"-\"\n"+
			"for standard input) and from key=value arguments, whose value may be @file (the file's contents)\n"+
			"or - (standard input); key= removes an item of the specification. Without -force the write is a\n"+
			"check-and-set: it creates the variable, or updates it only at -check-index (or the specification's\n"+
			"ModifyIndex).")
	af.register(fs, e)
	ns := nsFlag(fs, e)
	fs.BoolVar(&force, "force", false, "write regardless of the variable's state or index on the servers")
	fs.BoolVar(&verbose, "verbose", false, "report what is done on standard error")
	fs.StringVar(&checkIndex, "check-index", "", "act only if the variable's modify index on the servers is this (0: only if it does not exist)")
	fs.StringVar(&in, "in", "json", "format of a specification on standard input or in a file without .json: json (hcl is not supported)")
	defOut := "json"
	if stdoutIsTerminal(e) {
		defOut = "none"
	}
	fs.StringVar(&out, "out", defOut, "how to show the variable written: go-template, hcl, json, none or table")
	fs.StringVar(&tmpl, "template", "", "the template of -out go-template")
	if code, ok := parseFlags(fs, args, 1<<20); !ok {
		return code
	}
	idx, enforce, err := parseCheckIndex(checkIndex)
	if err != nil {
		return usagef(e, "Error parsing check-index value %q: %v", checkIndex, err)
	}
	if *ns == "*" {
		return usagef(e, `The wildcard namespace ("*") is not valid for this command.`)
	}
	if err := checkOutFormat(out, tmpl); err != nil {
		return usagef(e, "%v", err)
	}
	if in != "json" {
		if in == "hcl" {
			return usagef(e, "Drover does not support HCL variable specifications (-in hcl); use JSON")
		}
		return usagef(e, `Invalid value for "-in"; valid values are [hcl, json]`)
	}
	rest := fs.Args()
	if len(rest) < 1 {
		return usagef(e, "Not enough arguments (expected >1, got 0)")
	}
	isSpec := func(a string) bool { return a == "-" || (strings.HasPrefix(a, "@") && !strings.HasPrefix(a, `\@`)) }
	if len(rest) == 1 && !isSpec(rest[0]) {
		return usagef(e, "Must supply data")
	}
	var spec []byte
	path := ""
	readSpec := func(a string) error {
		if a == "-" {
			spec, err = io.ReadAll(e.stdin)
			return err
		}
		if ext := filepath.Ext(a[1:]); ext == ".hcl" {
			return errors.New("Drover does not support HCL variable specifications; use a .json file")
		}
		spec, err = os.ReadFile(a[1:])
		return err
	}
	if isSpec(rest[0]) {
		if err := readSpec(rest[0]); err != nil {
			return errorf(e, "reading the specification: %v", err)
		}
	} else {
		path = strings.Trim(strings.TrimSpace(rest[0]), "/")
		if len(rest) > 1 && isSpec(rest[1]) && !strings.Contains(rest[1], "=") {
			if err := readSpec(rest[1]); err != nil {
				return errorf(e, "reading the specification: %v", err)
			}
			rest = rest[1:]
		}
	}
	rest = rest[1:]
	v := &structs.VariableDecrypted{Items: structs.VariableItems{}}
	if len(spec) > 0 {
		var cv cliVariable
		if err := json.Unmarshal(spec, &cv); err != nil {
			return errorf(e, "Failed to parse variable data: error unmarshaling json: %v", err)
		}
		v.VariableMetadata = structs.VariableMetadata{Namespace: cv.Namespace, Path: cv.Path, ModifyIndex: cv.ModifyIndex}
		for k, val := range cv.Items {
			v.Items[k] = val
		}
		if (path != "" && path != v.Path) || (*ns != "" && *ns != v.Namespace) {
			v.ModifyIndex = 0 // a copy to another place
		}
	}
	if path != "" {
		v.Path = path
	}
	if *ns != "" {
		v.Namespace = *ns
	}
	stdinUsed := false
	for _, a := range rest {
		key, val, ok := strings.Cut(a, "=")
		if !ok {
			return errorf(e, "Failed to parse K=V data: invalid key/value pair %q: format must be key=value", a)
		}
		switch {
		case val == "":
			delete(v.Items, key)
			continue
		case strings.HasPrefix(val, "@"):
			buf, err := os.ReadFile(val[1:])
			if err != nil {
				return errorf(e, "Failed to parse K=V data: invalid key/value pair %q: error reading file: %v", a, err)
			}
			val = string(buf)
		case strings.HasPrefix(val, `\@`):
			val = val[1:]
		case val == "-":
			if stdinUsed {
				return errorf(e, "Failed to parse K=V data: invalid key/value pair %q: stdin already consumed", a)
			}
			stdinUsed = true
			buf, err := io.ReadAll(e.stdin)
			if err != nil {
				return errorf(e, "reading standard input: %v", err)
			}
			val = string(buf)
		}
		v.Items[key] = val
	}
	if enforce {
		v.ModifyIndex = idx
	}
	var cas *uint64
	if !force {
		cas = &v.ModifyIndex
	}
	written, _, err := af.client().PutVariable(context.Background(), v, cas, &api.WriteOptions{Namespace: v.Namespace})
	if err != nil {
		if casConflict(e, err) {
			return 1
		}
		return errorf(e, "creating variable: %v", err)
	}
	msg := fmt.Sprintf("Created variable %q with modify index %d", written.Path, written.ModifyIndex)
	if out == "none" {
		fmt.Fprintln(e.stdout, msg)
		return exitOK
	}
	if verbose {
		fmt.Fprintln(e.stderr, msg)
	}
	if err := renderVariable(e, written, out, tmpl); err != nil {
		return errorf(e, "rendering: %v", err)
	}
	return exitOK
}

func runVarGet(e *env, args []string) int {
	var af apiFlags
	var item, out, tmpl string
	fs := newFlagSet(e, "var get", "[options] <path>", "Show a variable.")
	af.register(fs, e)
	ns := nsFlag(fs, e)
	fs.StringVar(&item, "item", "", "print only this item's value, without a newline")
	defOut := "json"
	if stdoutIsTerminal(e) {
		defOut = "table"
	}
	fs.StringVar(&out, "out", defOut, "go-template, hcl, json, none or table")
	fs.StringVar(&tmpl, "template", "", "the template of -out go-template")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "This command takes one argument: <path>")
	}
	if err := checkOutFormat(out, tmpl); err != nil {
		return usagef(e, "%v", err)
	}
	if *ns == "*" {
		return usagef(e, `The wildcard namespace ("*") is not valid for this command.`)
	}
	v, _, err := af.client().Variable(context.Background(), fs.Arg(0), &api.QueryOptions{Namespace: *ns})
	if api.IsNotFound(err) {
		fmt.Fprintln(e.stderr, "Variable not found")
		return 1
	}
	if err != nil {
		return errorf(e, "retrieving variable: %v", err)
	}
	if item != "" {
		val, ok := v.Items[item]
		if !ok {
			return usagef(e, "Variable does not contain %q item", item)
		}
		fmt.Fprint(e.stdout, val)
		return exitOK
	}
	if err := renderVariable(e, v, out, tmpl); err != nil {
		return errorf(e, "rendering: %v", err)
	}
	return exitOK
}

func runVarList(e *env, args []string) int {
	var af apiFlags
	var asJSON, quiet bool
	var tmpl, pageToken, filter string
	var perPage int
	fs := newFlagSet(e, "var list", "[options] [<prefix>]", "List the variables (metadata only) whose path starts with <prefix>.")
	af.register(fs, e)
	ns := nsFlag(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&quiet, "q", false, "print the paths only")
	fs.StringVar(&tmpl, "t", "", "format the list with a Go template")
	fs.IntVar(&perPage, "per-page", 0, "how many variables to show per page")
	fs.StringVar(&pageToken, "page-token", "", "where to start the page")
	fs.StringVar(&filter, "filter", "", "a filter expression (not supported: use <prefix>)")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if filter != "" {
		return usagef(e, "Drover does not support filter expressions (-filter); use a prefix")
	}
	q := &api.QueryOptions{Namespace: *ns, Prefix: fs.Arg(0), PerPage: perPage, NextToken: pageToken}
	vars, qm, err := af.client().Variables(context.Background(), q)
	if err != nil {
		return errorf(e, "retrieving vars: %v", err)
	}
	sort.Slice(vars, func(i, j int) bool {
		if vars[i].Namespace == vars[j].Namespace {
			return vars[i].Path < vars[j].Path
		}
		return vars[i].Namespace < vars[j].Namespace
	})
	paths := func() []string {
		out := make([]string, len(vars))
		for i, v := range vars {
			out[i] = v.Path
			if *ns == "*" {
				out[i] = v.Namespace + "  " + v.Path
			}
		}
		return out
	}
	switch {
	case asJSON:
		var obj any = vars
		if quiet {
			obj = paths()
		}
		if perPage > 0 {
			obj = struct {
				Data      any
				QueryMeta *api.QueryMeta
			}{obj, qm}
		}
		return printJSON(e, obj)
	case quiet:
		for _, p := range paths() {
			fmt.Fprintln(e.stdout, p)
		}
	case tmpl != "":
		t, err := template.New("list").Parse(tmpl)
		if err != nil {
			return errorf(e, "parsing the template: %v", err)
		}
		if err := t.Execute(e.stdout, vars); err != nil {
			return errorf(e, "executing the template: %v", err)
		}
	case len(vars) == 0:
		fmt.Fprintln(e.stdout, "No matching variables found")
	default:
		t := newTable(e.stdout)
		t.row("Namespace", "Path", "Last Updated")
		for _, v := range vars {
			t.row(v.Namespace, v.Path, e.formatUnixNano(v.ModifyTime))
		}
		t.flush()
	}
	if qm.NextToken != "" {
		fmt.Fprintf(e.stderr, "Next page token: %s\n", qm.NextToken)
	}
	return exitOK
}

func runVarPurge(e *env, args []string) int {
	var af apiFlags
	var checkIndex string
	fs := newFlagSet(e, "var purge", "[options] <path>", "Delete a variable.")
	af.register(fs, e)
	ns := nsFlag(fs, e)
	fs.StringVar(&checkIndex, "check-index", "", "act only if the variable's modify index on the servers is this")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "This command takes one argument: <path>")
	}
	idx, enforce, err := parseCheckIndex(checkIndex)
	if err != nil {
		return usagef(e, "Invalid -check-index value %q: not parsable as uint64", checkIndex)
	}
	if *ns == "*" {
		return usagef(e, `The wildcard namespace ("*") is not valid for this command.`)
	}
	var cas *uint64
	if enforce {
		cas = &idx
	}
	path := fs.Arg(0)
	if _, err := af.client().DeleteVariable(context.Background(), path, cas, &api.WriteOptions{Namespace: *ns}); err != nil {
		if casConflict(e, err) {
			return 1
		}
		return errorf(e, "purging variable: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully purged variable %q!\n", path)
	return exitOK
}

// printKeys writes root keys as Nomad's keyring commands do.
func printKeys(e *env, keys []*structs.RootKeyMeta, verbose bool) {
	t := newTable(e.stdout)
	t.row("Key", "State", "Create Time")
	for _, k := range keys {
		t.row(shortID(k.KeyID, verbose), k.State, e.formatTime(time.Unix(0, k.CreateTime)))
	}
	t.flush()
}

func runKeyringList(e *env, args []string) int {
	var af apiFlags
	var verbose, asJSON bool
	fs := newFlagSet(e, "operator root keyring list", "[options]", "List the root keys of the keyring (needs a management token).")
	af.register(fs, e)
	fs.BoolVar(&verbose, "verbose", false, "show full key IDs")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	keys, _, err := af.client().RootKeys(context.Background(), nil)
	if err != nil {
		return errorf(e, "error: %v", err)
	}
	if asJSON {
		return printJSON(e, keys)
	}
	printKeys(e, keys, verbose)
	return exitOK
}

func runKeyringRotate(e *env, args []string) int {
	var af apiFlags
	var verbose, full, asJSON bool
	var prepublish string
	fs := newFlagSet(e, "operator root keyring rotate", "[options]",
		"Make a new active root key. With -full, also re-encrypt every variable with it (needs a management token).")
	af.register(fs, e)
	fs.BoolVar(&full, "full", false, "re-encrypt every variable with the new key")
	fs.BoolVar(&verbose, "verbose", false, "show the full key ID")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&prepublish, "prepublish", "", "publish the key later (not supported)")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if prepublish != "" {
		return usagef(e, "Drover does not support prepublished root keys (-prepublish)")
	}
	key, _, err := af.client().RotateRootKey(context.Background(), full, nil)
	if err != nil {
		return errorf(e, "error: %v", err)
	}
	if asJSON {
		return printJSON(e, key)
	}
	printKeys(e, []*structs.RootKeyMeta{key}, verbose)
	return exitOK
}

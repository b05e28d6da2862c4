package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func aclCommands() []*command {
	return []*command{
		{name: "acl bootstrap", synopsis: "Create the first management token (once per cluster)", run: runACLBootstrap},
		{name: "acl policy apply", synopsis: "Create or update an ACL policy from a file", run: runACLPolicyApply},
		{name: "acl policy list", synopsis: "List ACL policies", run: runACLPolicyList},
		{name: "acl policy info", synopsis: "Show an ACL policy", run: runACLPolicyInfo},
		{name: "acl policy delete", synopsis: "Delete an ACL policy", run: runACLPolicyDelete},
		{name: "acl token create", synopsis: "Create an ACL token", run: runACLTokenCreate},
		{name: "acl token list", synopsis: "List ACL tokens", run: runACLTokenList},
		{name: "acl token info", synopsis: "Show an ACL token by accessor ID", run: runACLTokenInfo},
		{name: "acl token update", synopsis: "Update an ACL token", run: runACLTokenUpdate},
		{name: "acl token delete", synopsis: "Delete an ACL token", run: runACLTokenDelete},
		{name: "acl token self", synopsis: "Show the token in use", run: runACLTokenSelf},
		{name: "acl cluster-secret rotate", synopsis: "Replace the servers' internal credential", run: runACLRotateClusterSecret},
	}
}

// printToken writes a token as Nomad's CLI does. The secret is shown
// only in the answers that create a token (and by self); elsewhere the
// servers do not have it (they keep its SHA-256).
func printToken(e *env, t *structs.ACLToken) {
	policies := "n/a"
	if t.Type != structs.ACLManagementToken {
		policies = "[" + strings.Join(t.Policies, " ") + "]"
	}
	expiry := "<none>"
	if !t.ExpirationTime.IsZero() {
		expiry = e.formatTime(t.ExpirationTime)
	}
	secret := t.SecretID
	if secret == "" {
		secret = "<hidden: shown only at creation>"
	}
	kv(e.stdout,
		"Accessor ID", t.AccessorID,
		"Secret ID", secret,
		"Name", t.Name,
		"Type", t.Type,
		"Global", fmt.Sprint(t.Global),
		"Create Time", e.formatTime(t.CreateTime),
		"Expiry Time", expiry,
		"Create Index", fmt.Sprint(t.CreateIndex),
		"Modify Index", fmt.Sprint(t.ModifyIndex),
		"Policies", policies,
		"Roles", "n/a",
	)
}

func runACLBootstrap(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "acl bootstrap", "[options]",
		"Create the cluster's first management token. It works once; the secret is shown only now.\n"+
			"Nomad's bootstrap reset (a reset index file) is not supported.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "output the token as JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	t, err := af.client().ACLBootstrap(context.Background())
	if err != nil {
		return errorf(e, "bootstrapping: %v", err)
	}
	if asJSON {
		return printJSON(e, t)
	}
	printToken(e, t)
	return exitOK
}

func runACLPolicyApply(e *env, args []string) int {
	var af apiFlags
	var description string
	fs := newFlagSet(e, "acl policy apply", "[options] <name> <path>",
		"Create or update the ACL policy <name> with the rules in <path> (\"-\" reads standard input).")
	af.register(fs, e)
	fs.StringVar(&description, "description", "", "the policy's description")
	if code, ok := parseFlags(fs, args, 2); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return usagef(e, "this command takes two arguments: <name> and <path>")
	}
	name, path := fs.Arg(0), fs.Arg(1)
	rules, err := readFileOrStdin(e, path)
	if err != nil {
		return errorf(e, "reading policy file: %v", err)
	}
	p := &structs.ACLPolicy{Name: name, Description: description, Rules: string(rules)}
	if err := af.client().ACLPolicyUpsert(context.Background(), p); err != nil {
		return errorf(e, "writing ACL policy: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully wrote %q ACL policy!\n", name)
	return exitOK
}

func runACLPolicyList(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "acl policy list", "[options]", "List the ACL policies the token may see.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "output as JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	ps, _, err := af.client().ACLPolicies(context.Background(), nil)
	if err != nil {
		return errorf(e, "retrieving ACL policies: %v", err)
	}
	if asJSON {
		return printJSON(e, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(e.stdout, "No policies found")
		return exitOK
	}
	t := newTable(e.stdout)
	t.row("Name", "Description")
	for _, p := range ps {
		t.row(p.Name, p.Description)
	}
	t.flush()
	return exitOK
}

func runACLPolicyInfo(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "acl policy info", "[options] <name>", "Show an ACL policy and its rules.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "output as JSON")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "this command takes one argument: <name>")
	}
	p, _, err := af.client().ACLPolicy(context.Background(), fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving ACL policy: %v", err)
	}
	if asJSON {
		return printJSON(e, p)
	}
	kv(e.stdout, "Name", p.Name, "Description", p.Description,
		"CreateIndex", fmt.Sprint(p.CreateIndex), "ModifyIndex", fmt.Sprint(p.ModifyIndex))
	fmt.Fprintf(e.stdout, "\nRules\n\n%s\n", strings.TrimRight(p.Rules, "\n"))
	return exitOK
}

func runACLPolicyDelete(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "acl policy delete", "[options] <name>", "Delete an ACL policy.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "this command takes one argument: <name>")
	}
	if err := af.client().ACLPolicyDelete(context.Background(), fs.Arg(0)); err != nil {
		return errorf(e, "deleting ACL policy: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully deleted %q ACL policy!\n", fs.Arg(0))
	return exitOK
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// tokenFlags are the flags of token create and update (Nomad's).
type tokenFlags struct {
	name, typ, ttl string
	global         bool
	policies       stringList
}

func (f *tokenFlags) register(fs *flag.FlagSet, typeDefault string) {
	fs.StringVar(&f.name, "name", "", "a human name for the token")
	fs.StringVar(&f.typ, "type", typeDefault, "client or management")
	fs.BoolVar(&f.global, "global", false, "a global token (Drover has one region; accepted for Nomad's sake)")
	fs.Var(&f.policies, "policy", "a policy the token has (repeatable)")
	fs.StringVar(&f.ttl, "ttl", "", "the token expires this long after creation, e.g. 8h")
}

func (f *tokenFlags) request() *api.ACLTokenRequest {
	return &api.ACLTokenRequest{Name: f.name, Type: f.typ, Policies: f.policies, Global: f.global, ExpirationTTL: f.ttl}
}

func runACLTokenCreate(e *env, args []string) int {
	var af apiFlags
	var tf tokenFlags
	var asJSON bool
	fs := newFlagSet(e, "acl token create", "[options]", "Create an ACL token; its secret is shown only now.")
	af.register(fs, e)
	tf.register(fs, structs.ACLClientToken)
	fs.BoolVar(&asJSON, "json", false, "output the token as JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	t, err := af.client().ACLTokenCreate(context.Background(), tf.request())
	if err != nil {
		return errorf(e, "creating token: %v", err)
	}
	if asJSON {
		return printJSON(e, t)
	}
	printToken(e, t)
	return exitOK
}

func runACLTokenUpdate(e *env, args []string) int {
	var af apiFlags
	var tf tokenFlags
	fs := newFlagSet(e, "acl token update", "[options] <accessor_id>",
		"Update a token's name, type or policies (flags not given keep their values).")
	af.register(fs, e)
	tf.register(fs, "")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "this command takes one argument: <accessor_id>")
	}
	c := af.client()
	ctx := context.Background()
	cur, _, err := c.ACLToken(ctx, fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving token: %v", err)
	}
	req := &api.ACLTokenRequest{Name: cur.Name, Type: cur.Type, Policies: cur.Policies, Global: cur.Global}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["name"] {
		req.Name = tf.name
	}
	if set["type"] {
		req.Type = tf.typ
	}
	if set["policy"] {
		req.Policies = tf.policies
	}
	t, err := c.ACLTokenUpdate(ctx, cur.AccessorID, req)
	if err != nil {
		return errorf(e, "updating token: %v", err)
	}
	printToken(e, t)
	return exitOK
}

func runACLTokenList(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "acl token list", "[options]", "List ACL tokens (needs a management token).")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "output as JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	ts, _, err := af.client().ACLTokens(context.Background(), nil)
	if err != nil {
		return errorf(e, "retrieving ACL tokens: %v", err)
	}
	if asJSON {
		return printJSON(e, ts)
	}
	if len(ts) == 0 {
		fmt.Fprintln(e.stdout, "No tokens found")
		return exitOK
	}
	t := newTable(e.stdout)
	t.row("Name", "Type", "Global", "Accessor ID", "Expired")
	now := e.now()
	for _, tok := range ts {
		expired := !tok.ExpirationTime.IsZero() && now.After(tok.ExpirationTime)
		t.row(tok.Name, tok.Type, fmt.Sprint(tok.Global), tok.AccessorID, fmt.Sprint(expired))
	}
	t.flush()
	return exitOK
}

func runACLTokenInfo(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "acl token info", "[options] <accessor_id>",
		"Show a token by accessor ID (management, or the token itself). Its secret is not shown: the servers keep only its hash.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "output as JSON")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "this command takes one argument: <accessor_id>")
	}
	t, _, err := af.client().ACLToken(context.Background(), fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving token: %v", err)
	}
	if asJSON {
		return printJSON(e, t)
	}
	printToken(e, t)
	return exitOK
}

func runACLTokenSelf(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "acl token self", "[options]", "Show the token in use (-token, DROVER_TOKEN or NOMAD_TOKEN).")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "output as JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	t, err := af.client().ACLTokenSelf(context.Background())
	if err != nil {
		return errorf(e, "fetching self token: %v", err)
	}
	if asJSON {
		return printJSON(e, t)
	}
	printToken(e, t)
	return exitOK
}

func runACLTokenDelete(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "acl token delete", "[options] <accessor_id>", "Delete an ACL token.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "this command takes one argument: <accessor_id>")
	}
	if err := af.client().ACLTokenDelete(context.Background(), fs.Arg(0)); err != nil {
		return errorf(e, "deleting token: %v", err)
	}
	fmt.Fprintf(e.stdout, "Token %s successfully deleted\n", fs.Arg(0))
	return exitOK
}

func runACLRotateClusterSecret(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "acl cluster-secret rotate", "[options]",
		"Replace the servers' internal credential (the cluster secret their scheduler calls carry)\n"+
			"with a new random one. The old one is accepted for one minute more. Needs a management token.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	index, err := af.client().ACLRotateClusterSecret(context.Background(), nil)
	if err != nil {
		return errorf(e, "rotating the cluster secret: %v", err)
	}
	fmt.Fprintf(e.stdout, "Rotated the cluster secret at index %d; the old one is accepted for one minute more\n", index)
	return exitOK
}

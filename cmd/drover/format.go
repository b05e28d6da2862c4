package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drover-project/drover/api"
)

// table writes aligned columns separated by two spaces.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { _ = t.tw.Flush() }

// apiFlags are the flags every command that talks to an agent takes.
type apiFlags struct {
	address string
	token   string
	tls     api.TLSConfig
}

func (f *apiFlags) register(fs *flag.FlagSet, e *env) {
	fs.StringVar(&f.address, "address", api.AddressFromEnv(e.getenv),
		"agent HTTP address, http:// or https:// (env DROVER_ADDR, then NOMAD_ADDR)")
	fs.StringVar(&f.token, "token", api.TokenFromEnv(e.getenv),
		"ACL secret sent as X-Nomad-Token (env DROVER_TOKEN, then NOMAD_TOKEN)")
	registerTLSFlags(fs, e, &f.tls)
}

// registerTLSFlags adds Nomad's HTTPS flags (-ca-cert, -client-cert,
// -client-key, -tls-server-name, -tls-skip-verify) to fs, defaulting to
// their environment variables.
func registerTLSFlags(fs *flag.FlagSet, e *env, t *api.TLSConfig) {
	*t = api.TLSConfigFromEnv(e.getenv)
	fs.StringVar(&t.CACert, "ca-cert", t.CACert,
		"PEM file of the CA that signed the agent's HTTPS certificate (env DROVER_CACERT, then NOMAD_CACERT)")
	fs.StringVar(&t.ClientCert, "client-cert", t.ClientCert,
		"PEM client certificate to present over HTTPS (env DROVER_CLIENT_CERT, then NOMAD_CLIENT_CERT)")
	fs.StringVar(&t.ClientKey, "client-key", t.ClientKey,
		"PEM key of -client-cert (env DROVER_CLIENT_KEY, then NOMAD_CLIENT_KEY)")
	fs.StringVar(&t.ServerName, "tls-server-name", t.ServerName,
		"name to check in the agent's certificate instead of the address's host (env DROVER_TLS_SERVER_NAME, then NOMAD_TLS_SERVER_NAME)")
	fs.BoolVar(&t.Insecure, "tls-skip-verify", t.Insecure,
		"do not check the agent's certificate; for testing only (env DROVER_SKIP_VERIFY, then NOMAD_SKIP_VERIFY)")
}

func (f *apiFlags) client() *api.Client { return f.clientAt(f.address) }

// clientAt is a client of the agent at address with the flags' token and
// TLS. A TLS setting that cannot be loaded fails the client's first
// request, saying why.
func (f *apiFlags) clientAt(address string) *api.Client {
	c := &api.Client{Address: address, Token: f.token}
	if !f.tls.IsZero() {
		hc, err := f.tls.HTTPClient()
		if err != nil {
			hc = api.FailingClient(err)
		}
		c.HTTPClient = hc
	}
	return c
}

// newFlagSet returns a flag set for the named command whose usage line
// and errors go to e.stderr.
func newFlagSet(e *env, name, args, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: drover %s %s\n\n%s\n\nOptions:\n\n", name, args, help)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and reports the exit code to use when parsing
// ends the command (0 for -h, 1 for an error); ok is false then.
func parseFlags(fs *flag.FlagSet, args []string, maxArgs int) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		return 1, false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(fs.Output(), "This command takes at most %d argument(s); got %q\n", maxArgs, fs.Args())
		fs.Usage()
		return 1, false
	}
	return 0, true
}

// usagef reports a mistake in the command line and returns exit code 1.
func usagef(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "Error: "+format+"\n", args...)
	return 1
}

func errorf(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "Error "+format+"\n", args...)
	return 1
}

// defaultMonitorWait is how long a monitor's blocking query waits before
// it prints that it is still waiting.
const defaultMonitorWait = 5 * time.Second

// kv writes "Key = Value" lines with the "=" aligned, as Nomad does.
func kv(w io.Writer, pairs ...string) {
	width := 0
	for i := 0; i < len(pairs); i += 2 {
		width = max(width, len(pairs[i]))
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(w, "%-*s = %s\n", width, pairs[i], pairs[i+1])
	}
}

// shortID returns the first 8 characters of a UUID, or all of id with
// verbose.
func shortID(id string, verbose bool) string {
	if verbose || len(id) <= 8 {
		return id
	}
	return id[:8]
}

// orNone returns s, or "<none>" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// formatTime renders t in the env's location, RFC 3339; "N/A" for zero.
func (e *env) formatTime(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.In(e.loc).Format(time.RFC3339)
}

// formatUnixNano renders a Unix nanosecond timestamp.
func (e *env) formatUnixNano(ns int64) string {
	if ns == 0 {
		return "N/A"
	}
	return e.formatTime(time.Unix(0, ns))
}

// ago renders how long before now t was: "45s ago", "3m12s ago",
// "2h5m ago", "3d4h ago"; "just now" under a second.
func (e *env) ago(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	d := e.now().Sub(t).Round(time.Second)
	if d < 0 {
		return "in the future"
	}
	if d < time.Second {
		return "just now"
	}
	units := []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	var b strings.Builder
	shown := 0
	for _, u := range units {
		if n := d / u.d; n > 0 && shown < 2 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
			shown++
		} else if shown > 0 {
			break
		}
	}
	return b.String() + " ago"
}

func (e *env) agoUnixNano(ns int64) string {
	if ns == 0 {
		return "N/A"
	}
	return e.ago(time.Unix(0, ns))
}

// printJSON writes v as indented JSON (Nomad's -json output).
func printJSON(e *env, v any) int {
	buf, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return errorf(e, "encoding JSON: %v", err)
	}
	fmt.Fprintln(e.stdout, string(buf))
	return 0
}

// formatMiB renders a size in MiB: "64 MiB", "7.6 GiB".
func formatMiB(mb int64) string {
	if mb >= 1024 {
		return strconv.FormatFloat(float64(mb)/1024, 'f', 1, 64) + " GiB"
	}
	return strconv.FormatInt(mb, 10) + " MiB"
}

// readFileOrStdin reads the file at path, or standard input when path is
// "-" (the specification files of apply commands).
func readFileOrStdin(e *env, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(path)
}

package templatespec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Functions lists consul-template's own template functions that Drover
// serves: its helpers, the task environment (env), files in the task
// directory (file) and Nomad's services and variables. Sprig's functions
// come on top, each named "sprig_<name>" as consul-template names them.
var Functions = []string{
	"file", "nomadServices", "nomadService", "nomadVarList", "nomadVarListSafe", "nomadVar",
	"nomadVarExists", "scratch", "base64Decode", "base64Encode", "base64URLDecode",
	"base64URLEncode", "byKey", "byPort", "byTag", "contains", "containsAll", "containsAny",
	"containsNone", "containsNotAll", "env", "mustEnv", "envOrDefault", "executeTemplate",
	"explode", "explodeMap", "mergeMap", "mergeMapWithOverride", "in", "indent", "loop", "join",
	"trim", "trimPrefix", "trimSuffix", "trimSpace", "parseBool", "parseFloat", "parseInt",
	"parseJSON", "parseUint", "parseYAML", "regexReplaceAll", "regexMatch", "replaceAll",
	"sha256Hex", "md5sum", "hmacSHA256Hex", "timestamp", "toLower", "toJSON", "toJSONPretty",
	"toUnescapedJSON", "toUnescapedJSONPretty", "toTitle", "toTOML", "toUpper", "toYAML", "split",
	"splitToMap", "byMeta", "sockaddr", "add", "subtract", "multiply", "divide", "modulo",
	"minimum", "maximum", "spew_dump", "spew_printf", "spew_sdump", "spew_sprintf",
}

// ConsulFunctions and VaultFunctions are consul-template functions that
// read Consul or Vault; Drover has neither and refuses them by name.
var (
	ConsulFunctions = []string{"datacenters", "exportedServices", "key", "keyExists", "keyOrDefault",
		"ls", "safeLs", "node", "nodes", "partitions", "peerings", "service", "connect", "services",
		"tree", "safeTree", "caRoots", "caLeaf"}
	VaultFunctions = []string{"secret", "secrets", "pkiCert"}
	// DeniedFunctions are disabled as in Nomad's default client
	// configuration (template { function_denylist }): they run commands
	// or write files outside the template's destination.
	DeniedFunctions = []string{"plugin", "writeToFile"}
)

// funcs holds a stand-in for every function name a template may parse
// with (parsing checks names only), built once.
var funcs = func() template.FuncMap {
	stub := func(...any) any { return nil }
	m := template.FuncMap{}
	for _, lists := range [][]string{Functions, ConsulFunctions, VaultFunctions, DeniedFunctions} {
		for _, n := range lists {
			m[n] = stub
		}
	}
	for _, n := range slices.Sorted(maps.Keys(sprig.HermeticTxtFuncMap())) {
		m["sprig_"+n] = stub
	}
	return m
}()

var refused = func() map[string]string {
	m := map[string]string{}
	for _, n := range ConsulFunctions {
		m[n] = "Drover does not support the Consul function " + strconv.Quote(n) + " (there is no Consul)"
	}
	for _, n := range VaultFunctions {
		m[n] = "Drover does not support the Vault function " + strconv.Quote(n) + " (there is no Vault)"
	}
	for _, n := range DeniedFunctions {
		m[n] = "the function " + strconv.Quote(n) + " is disabled (as in Nomad's default function_denylist)"
	}
	return m
}()

// FunctionError is Check's error for a template that parses but calls a
// function Drover does not serve.
type FunctionError struct{ Message string }

func (e *FunctionError) Error() string { return e.Message }

// Check parses text with the delimiters left and right (empty means
// "{{" and "}}") and returns the first problem: a parse error, or a call
// of a function Drover does not serve. Nothing is executed.
func Check(text, left, right string) error {
	t, err := template.New("data").Delims(left, right).Funcs(funcs).Parse(text)
	if err != nil {
		return err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if msg := walk(tt.Tree.Root); msg != "" {
			return &FunctionError{Message: msg}
		}
	}
	return nil
}

// walk returns the message for the first refused function called under n.
func walk(n parse.Node) string {
	switch n := n.(type) {
	case nil:
		return ""
	case *parse.ListNode:
		if n == nil {
			return ""
		}
		for _, c := range n.Nodes {
			if m := walk(c); m != "" {
				return m
			}
		}
	case *parse.ActionNode:
		return walk(n.Pipe)
	case *parse.IfNode:
		return walkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return walkBranch(&n.BranchNode)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode)
	case *parse.TemplateNode:
		return walk(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return ""
		}
		for _, c := range n.Cmds {
			if m := walk(c); m != "" {
				return m
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if m := walk(a); m != "" {
				return m
			}
		}
	case *parse.ChainNode:
		return walk(n.Node)
	case *parse.IdentifierNode:
		return refused[n.Ident]
	}
	return ""
}

func walkBranch(b *parse.BranchNode) string {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if m := walk(n); m != "" {
			return m
		}
	}
	return ""
}

// Validate checks every template of the job's tasks with Check, and the
// change_signal of signal-mode templates, and returns the problems, each
// naming its field
// ("TaskGroups[0].Tasks[1].Templates[0].EmbeddedTmpl"). Templates whose
// text is in a file on the client (SourcePath) are checked when the
// client reads them.
func Validate(job *structs.Job) []structs.FieldError {
	var errs []structs.FieldError
	for i, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for k, task := range tg.Tasks {
			if task == nil {
				continue
			}
			for n, t := range task.Templates {
				if t == nil {
					continue
				}
				if t.ChangeMode == structs.TemplateChangeModeSignal && t.ChangeSignal != "" {
					if _, err := driverspec.ParseSignal(t.ChangeSignal); err != nil {
						errs = append(errs, structs.FieldError{
							Field:   fmt.Sprintf("TaskGroups[%d].Tasks[%d].Templates[%d].ChangeSignal", i, k, n),
							Message: err.Error(),
						})
					}
				}
				if t.EmbeddedTmpl == "" {
					continue
				}
				err := Check(t.EmbeddedTmpl, t.LeftDelim, t.RightDelim)
				if err == nil {
					continue
				}
				msg := "the template does not parse: " + err.Error()
				var fe *FunctionError
				if errors.As(err, &fe) {
					msg = fe.Message
				}
				errs = append(errs, structs.FieldError{
					Field:   fmt.Sprintf("TaskGroups[%d].Tasks[%d].Templates[%d].EmbeddedTmpl", i, k, n),
					Message: msg,
				})
			}
		}
	}
	return errs
}

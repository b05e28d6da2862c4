package jobspec

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Functions Nomad's job files may call that are not in cty's standard
// library: the encoding and hashing ones are written here as Nomad's
// (hashicorp/go-cty-funcs) behave; the rest are refused by name.

// nomadOnlyFunctions are functions Nomad offers that Drover does not:
// calling one is an error saying so, rather than "no such function". The
// job file is checked for calls before evaluation (unsupportedCalls); the
// stand-ins below answer calls from variable files.
// The file system ones read files beside the job file, which the parser
// must never do.
var nomadOnlyFunctions = []string{
	"bcrypt", "rsadecrypt", "uuidv4", "uuidv5",
	"cidrhost", "cidrnetmask", "cidrsubnet", "cidrsubnets",
	"yamldecode", "yamlencode",
	"abspath", "basename", "dirname", "file", "filebase64", "fileexists", "fileset", "pathexpand",
}

// unsupportedCalls reports every call in body to a function Nomad has and
// Drover does not. It runs before anything is evaluated, so that try() and
// can() cannot turn such a call into a fallback value that would differ
// from Nomad's result.
func unsupportedCalls(body *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && contains(nomadOnlyFunctions, call.Name) {
			diags = append(diags, diagAt(call.NameRange, "Unsupported function",
				"Drover does not support the %q function", call.Name))
		}
		return nil
	})
	return diags
}

// unsupportedFunc returns a function that accepts any arguments and fails
// with a message naming it.
func unsupportedFunc(name string) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType,
			AllowNull: true, AllowUnknown: true, AllowDynamicType: true},
		Type: func([]cty.Value) (cty.Type, error) {
			return cty.NilType, fmt.Errorf("Drover does not support the %q function", name)
		},
	})
}

// stringFunc makes a function of one string returning a string.
func stringFunc(impl func(string) (string, error)) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := impl(args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), function.NewArgError(0, err)
			}
			return cty.StringVal(s), nil
		},
	})
}

// hashFunc hashes the UTF-8 bytes of a string and returns lower-case hex.
func hashFunc(newHash func() hash.Hash) function.Function {
	return stringFunc(func(s string) (string, error) {
		h := newHash()
		h.Write([]byte(s))
		return hex.EncodeToString(h.Sum(nil)), nil
	})
}

var (
	base64EncodeFunc = stringFunc(func(s string) (string, error) {
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	})
	base64DecodeFunc = stringFunc(func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("failed to decode base64 data %q", s)
		}
		if !utf8.Valid(b) {
			return "", fmt.Errorf("the decoded result of %q is not valid UTF-8", s)
		}
		return string(b), nil
	})
	urlEncodeFunc = stringFunc(func(s string) (string, error) { return url.QueryEscape(s), nil })
	md5Func       = hashFunc(md5.New)
	sha1Func      = hashFunc(sha1.New)
	sha256Func    = hashFunc(sha256.New)
	sha512Func    = hashFunc(sha512.New)
)

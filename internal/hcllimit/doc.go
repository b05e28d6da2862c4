// Package hcllimit bounds HCL source before hashicorp/hcl/v2 parses it.
//
// hcl/v2's parser, its evaluator and the decoders on top of them are
// recursive: every bracket, brace, parenthesis, quoted string, template
// interpolation or directive, and every operator of a chain (!!!!x,
// 1+1+1+..., a ? b : c ? d : ...) is one more level of Go stack. Go
// cannot recover from a stack overflow; it kills the whole process. A
// 150 KB job file nested 75,000 deep sent to /v1/jobs/parse killed the
// agent, server and client together.
//
// HCL, JSON and Expression walk the text once, lexically, without
// building anything: they count open nesting levels (outside comments,
// and following strings, heredocs and template interpolations) and the
// operators along the open path, and refuse source that goes beyond
// MaxDepth or MaxOperators, or is larger than MaxSourceBytes, with a
// diagnostic naming file:line:column. Source they accept parses within a
// small, fixed stack.
//
// The walk is conservative: it may count a construct hcl would treat as
// shallower (an identifier with dashes next to an operator, say), never
// the reverse. It does not validate syntax; whatever it lets through,
// hcl still checks.
//
// It must never allocate in proportion to the input beyond the open path
// (a stack of at most MaxDepth frames), never call hcl, and never accept
// source whose parse tree is deeper than its counts.
package hcllimit

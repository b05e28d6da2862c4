package structs

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorCode classifies an error so that callers on the other side of an RPC
// or HTTP boundary can decide what to do without reading its text.
type ErrorCode string

const (
	// ErrCodeNoLeader: no cluster leader is known; the request may be retried.
	ErrCodeNoLeader ErrorCode = "no_leader"
	// ErrCodeNotLeader: this server lost leadership while handling the request.
	ErrCodeNotLeader ErrorCode = "not_leader"
	// ErrCodeNotFound: the named object does not exist.
	ErrCodeNotFound ErrorCode = "not_found"
	// ErrCodeInvalid: the request failed validation; nothing was written.
	ErrCodeInvalid ErrorCode = "invalid"
	// ErrCodeTooLarge: the request exceeds a size limit.
	ErrCodeTooLarge ErrorCode = "too_large"
	// ErrCodeConflict: a check-index or similar precondition failed.
	ErrCodeConflict ErrorCode = "conflict"
	// ErrCodePlanQueueDisabled: the plan queue is not accepting plans (not leader).
	ErrCodePlanQueueDisabled ErrorCode = "plan_queue_disabled"
	// ErrCodeBrokerDisabled: the eval broker is not enabled (not leader).
	ErrCodeBrokerDisabled ErrorCode = "broker_disabled"
	// ErrCodeTokenMismatch: an eval ack/nack or plan carried a stale token.
	ErrCodeTokenMismatch ErrorCode = "token_mismatch"
	// ErrCodeUnsupported: a feature Drover does not implement.
	ErrCodeUnsupported ErrorCode = "unsupported"
	// ErrCodeShutdown: the server is shutting down.
	ErrCodeShutdown ErrorCode = "shutdown"
	// ErrCodePermissionDenied: the caller may not make this request:
	// ACLs are enabled and the request's token (or its absence) does not
	// grant the operation, a node's call lacks that node's secret, or the
	// peer's TLS certificate's role does not allow the RPC. Nothing was
	// written; HTTP 403.
	ErrCodePermissionDenied ErrorCode = "permission_denied"
	// ErrCodeTokenNotFound: the request carries a secret that matches no
	// ACL token (or only an expired one); HTTP 403.
	ErrCodeTokenNotFound ErrorCode = "token_not_found"
	// ErrCodeInternal: anything else.
	ErrCodeInternal ErrorCode = "internal"
	// ErrCodeDiskFull: a server could not write because its file system
	// is full (or over quota); nothing was acknowledged. HTTP 507.
	ErrCodeDiskFull ErrorCode = "disk_full"
	// ErrCodeOutcomeUnknown: a write was sent towards the leader, but no
	// answer came (the leader stopped answering, or lost its leadership
	// while committing): it may or may not have been applied. Read the
	// object back before repeating a write that is not idempotent. HTTP
	// 504.
	ErrCodeOutcomeUnknown ErrorCode = "outcome_unknown"
)

var knownCodes = map[ErrorCode]bool{
	ErrCodeNoLeader: true, ErrCodeNotLeader: true, ErrCodeNotFound: true,
	ErrCodeInvalid: true, ErrCodeTooLarge: true, ErrCodeConflict: true,
	ErrCodePlanQueueDisabled: true, ErrCodeBrokerDisabled: true,
	ErrCodeTokenMismatch: true, ErrCodeUnsupported: true,
	ErrCodeShutdown: true, ErrCodeInternal: true,
	ErrCodePermissionDenied: true, ErrCodeTokenNotFound: true,
	ErrCodeDiskFull: true, ErrCodeOutcomeUnknown: true,
}

// Error is an error with a code. It survives an RPC round trip: Error()
// renders "[code] message" and DecodeRPCError parses exactly that form back.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string { return "[" + string(e.Code) + "] " + e.Message }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrNoLeader) works for any message.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// NewError returns an *Error with a formatted message.
func NewError(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinel errors, compared with errors.Is (which matches on code).
var (
	ErrNoLeader          = &Error{Code: ErrCodeNoLeader, Message: "No cluster leader"}
	ErrNotLeader         = &Error{Code: ErrCodeNotLeader, Message: "not the cluster leader"}
	ErrNotFound          = &Error{Code: ErrCodeNotFound, Message: "not found"}
	ErrPlanQueueDisabled = &Error{Code: ErrCodePlanQueueDisabled, Message: "plan queue is disabled"}
	ErrBrokerDisabled    = &Error{Code: ErrCodeBrokerDisabled, Message: "eval broker is disabled"}
	ErrTokenMismatch     = &Error{Code: ErrCodeTokenMismatch, Message: "token does not match"}
	ErrShutdown          = &Error{Code: ErrCodeShutdown, Message: "shutting down"}
	// ErrPermissionDenied's message is Nomad's, which tools match on.
	ErrPermissionDenied = &Error{Code: ErrCodePermissionDenied, Message: "Permission denied"}
	ErrTokenNotFound    = &Error{Code: ErrCodeTokenNotFound, Message: "ACL token not found"}
)

// CodeOf returns the code of err, ErrCodeInternal for an error without one,
// and "" for nil.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var v *ValidationError
	if errors.As(err, &v) {
		return ErrCodeInvalid
	}
	return ErrCodeInternal
}

// DecodeRPCError turns the text of an error received over RPC back into a
// typed error. It is the only place that reads error text: the form it
// parses is the one (*Error).Error and (*ValidationError).Error produce.
func DecodeRPCError(msg string) error {
	if strings.HasPrefix(msg, "[") {
		if end := strings.Index(msg, "] "); end > 1 {
			code := ErrorCode(msg[1:end])
			if knownCodes[code] {
				return &Error{Code: code, Message: msg[end+2:]}
			}
		}
	}
	return &Error{Code: ErrCodeInternal, Message: msg}
}

// FieldError is one validation problem, naming the field it concerns with a
// path such as "TaskGroups[0].Tasks[1].Resources.MemoryMB".
type FieldError struct {
	Field   string
	Message string
}

func (f FieldError) String() string {
	if f.Field == "" {
		return f.Message
	}
	return f.Field + ": " + f.Message
}

// ValidationError collects every problem found in one object.
type ValidationError struct {
	Errors []FieldError
}

func (v *ValidationError) Error() string {
	parts := make([]string, len(v.Errors))
	for i, e := range v.Errors {
		parts[i] = e.String()
	}
	return "[" + string(ErrCodeInvalid) + "] " + strings.Join(parts, "; ")
}

// Messages returns each problem as "Field: message".
func (v *ValidationError) Messages() []string {
	out := make([]string, len(v.Errors))
	for i, e := range v.Errors {
		out[i] = e.String()
	}
	return out
}

// validator accumulates field errors under a path prefix.
type validator struct {
	errs []FieldError
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return &ValidationError{Errors: v.errs}
}

func join(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

package structs

import (
	"fmt"
	"regexp"
	"strings"
)

// Variables (Nomad's "Nomad Variables"): small encrypted key/value
// documents addressed by namespace and path. The state store, the Raft
// log and snapshots hold only VariableEncrypted (the items sealed with a
// root key of the keyring, server/encrypter.go); servers decrypt when
// answering a read. JSON shapes: Nomad's api.Variable and
// api.VariableMetadata.

// MaxVariableSize caps the summed length of a variable's keys and values
// (Nomad's 64 KiB limit, not configurable).
const MaxVariableSize = 64 * 1024

// MaxVariablePathLength caps a variable's path (Nomad's 128).
const MaxVariablePathLength = 128

// VariableMetadata is what a list shows of a variable. CreateTime and
// ModifyTime are Unix nanoseconds, as in Nomad.
type VariableMetadata struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
}

// VariableEncrypted is the only form of a variable that is stored or
// replicated: its metadata, and its items encrypted (Data: nonce then
// AES-256-GCM ciphertext) with the root key KeyID.
type VariableEncrypted struct {
	VariableMetadata
	Data  []byte
	KeyID string
}

// VariableDecrypted is a variable with its items in clear: request and
// answer bodies only, never stored.
type VariableDecrypted struct {
	VariableMetadata
	Items VariableItems
}

// VariableItems are a variable's key/value pairs, sealed as one unit.
type VariableItems map[string]string

// Size is the summed length of keys and values (what MaxVariableSize caps).
func (vi VariableItems) Size() int {
	n := 0
	for k, v := range vi {
		n += len(k) + len(v)
	}
	return n
}

// validVariablePath is Nomad's path syntax: RFC 3986 unreserved
// characters without '.', plus '/'.
var validVariablePath = regexp.MustCompile(`^[a-zA-Z0-9_~/-]{1,128}$`)

// ValidateVariablePath checks a path as Nomad does, including the paths
// it reserves under "nomad/".
func ValidateVariablePath(path string) error {
	if path == "" {
		return NewError(ErrCodeInvalid, "variable requires path")
	}
	if !validVariablePath.MatchString(path) {
		return NewError(ErrCodeInvalid, "invalid path %q: a path is 1 to %d of the characters a-z A-Z 0-9 - _ ~ /", path, MaxVariablePathLength)
	}
	parts := strings.Split(path, "/")
	if parts[0] != "nomad" {
		return nil
	}
	switch {
	case len(parts) == 1:
		return NewError(ErrCodeInvalid, `"nomad" is a reserved top-level directory path, but you may write variables to "nomad/jobs", "nomad/job-templates", or below`)
	case parts[1] == "jobs":
		return nil
	case parts[1] == "job-templates" && len(parts) == 3:
		return nil
	case parts[1] == "job-templates":
		return NewError(ErrCodeInvalid, `"nomad/job-templates" is a reserved directory path, but you may write variables at the level below it, for example, "nomad/job-templates/template-name"`)
	}
	return NewError(ErrCodeInvalid, `only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level "nomad" directory`)
}

// Validate checks a variable to be written: namespace, path, items and
// size, with Nomad's rules and messages.
func (v *VariableDecrypted) Validate() error {
	if v.Namespace == "*" {
		return NewError(ErrCodeInvalid, `can not target wildcard ("*")namespace`)
	}
	if len(v.Items) == 0 {
		return NewError(ErrCodeInvalid, "empty variables are invalid")
	}
	if v.Items.Size() > MaxVariableSize {
		return NewError(ErrCodeTooLarge, "variables are limited to 64KiB in total size")
	}
	return ValidateVariablePath(v.Path)
}

// VarOp is a variable write's operation (Nomad's names).
type VarOp string

const (
	VarOpSet       VarOp = "set"
	VarOpDelete    VarOp = "delete"
	VarOpDeleteCAS VarOp = "delete-cas"
	VarOpCAS       VarOp = "cas"
)

// VarOpResult is what a variable write did.
type VarOpResult string

const (
	VarOpResultOk       VarOpResult = "ok"
	VarOpResultConflict VarOpResult = "conflict"
	// VarOpResultRedacted is a conflict whose current value the caller
	// may not read: the answer carries its metadata only.
	VarOpResultRedacted VarOpResult = "conflict-redacted"
)

// VariablesApplyRequest writes or deletes one variable (RPC
// Variables.Apply). For the CAS operations Var.ModifyIndex is the index
// the caller expects (0: the variable must not exist).
type VariablesApplyRequest struct {
	Op  VarOp
	Var *VariableDecrypted
	WriteRequest
}

// VariablesApplyResponse answers VariablesApplyRequest: Output is the
// variable written (nil for a delete); on a CAS conflict Result says so
// and Conflict holds the current variable (empty metadata if there is
// none; no items if the caller may not read it).
type VariablesApplyResponse struct {
	Op       VarOp
	Result   VarOpResult
	Conflict *VariableDecrypted
	Output   *VariableDecrypted
	WriteMeta
}

// IsConflict reports a CAS conflict.
func (r *VariablesApplyResponse) IsConflict() bool {
	return r.Result == VarOpResultConflict || r.Result == VarOpResultRedacted
}

// VarApplyStateRequest is the Raft entry of a variable write: the
// variable already encrypted by the leader, with CreateTime and
// ModifyTime set (the FSM sets the indexes).
type VarApplyStateRequest struct {
	Op  VarOp
	Var *VariableEncrypted
	WriteRequest
}

// VarConflictError is the FSM's refusal of a check-and-set variable
// write or delete (the entry's result, in-process only): nothing was
// written; Conflict is the variable as stored (only its namespace and
// path when there is none).
type VarConflictError struct {
	Conflict *VariableEncrypted
}

func (e *VarConflictError) Error() string {
	return fmt.Sprintf("cas error: variable %s is at modify index %d", &e.Conflict.VariableMetadata, e.Conflict.ModifyIndex)
}

// VariablesRekeyRequest is the Raft entry of one batch of a full
// rotation: variables re-encrypted with the new key. Each is written only
// if its ModifyIndex still matches the stored one (a variable changed
// since it was read is skipped: its new value was already encrypted with
// the active key); the written variables keep their indexes and times.
type VariablesRekeyRequest struct {
	Vars []*VariableEncrypted
	WriteRequest
}

// VariablesListRequest lists variables' metadata (Prefix on paths;
// Namespace "*" lists every namespace).
type VariablesListRequest struct {
	QueryOptions
}

// VariablesListResponse answers VariablesListRequest.
type VariablesListResponse struct {
	Data []*VariableMetadata
	QueryMeta
}

// VariablesReadRequest reads one variable.
type VariablesReadRequest struct {
	Path string
	QueryOptions
}

// VariablesReadResponse answers VariablesReadRequest; Data is nil when
// there is no such variable.
type VariablesReadResponse struct {
	Data *VariableDecrypted
	QueryMeta
}

// The keyring. Root keys' material stays in each server's keystore
// (server/keystore.go); only their metadata is replicated.

// EncryptionAlgorithmAES256GCM is the one algorithm (Nomad's name).
const EncryptionAlgorithmAES256GCM = "aes256-gcm"

// Root key states (Nomad's names). Exactly one key is active; variables
// are encrypted with it and identities signed with it.
const (
	RootKeyStateActive   = "active"
	RootKeyStateInactive = "inactive"
)

// RootKeyMeta is a root key's replicated metadata (api.RootKeyMeta).
// CreateTime is Unix nanoseconds.
type RootKeyMeta struct {
	KeyID       string
	Algorithm   string
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
	State       string
}

// Active reports whether the key is the active one.
func (k *RootKeyMeta) Active() bool { return k.State == RootKeyStateActive }

// RootKey is a key with its material: only between servers (RPC
// Keyring.Get) and in a server's keystore.
type RootKey struct {
	Meta *RootKeyMeta
	Key  []byte
}

// RootKeyMetaUpsertRequest is the Raft entry that records a new active
// key; every other key becomes inactive.
type RootKeyMetaUpsertRequest struct {
	RootKeyMeta *RootKeyMeta
	WriteRequest
}

// KeyringListRootKeyMetaRequest lists the keys' metadata.
type KeyringListRootKeyMetaRequest struct {
	QueryOptions
}

// KeyringListRootKeyMetaResponse answers KeyringListRootKeyMetaRequest.
type KeyringListRootKeyMetaResponse struct {
	Keys []*RootKeyMeta
	QueryMeta
}

// KeyringRotateRootKeyRequest makes a new active key; Full also
// re-encrypts every variable with it.
type KeyringRotateRootKeyRequest struct {
	Algorithm string
	Full      bool
	WriteRequest
}

// KeyringRotateRootKeyResponse answers KeyringRotateRootKeyRequest.
type KeyringRotateRootKeyResponse struct {
	Key *RootKeyMeta
	WriteMeta
}

// KeyringGetRootKeyRequest asks a server for a key's material (servers
// only).
type KeyringGetRootKeyRequest struct {
	KeyID string
	QueryOptions
}

// KeyringGetRootKeyResponse answers KeyringGetRootKeyRequest.
type KeyringGetRootKeyResponse struct {
	Key *RootKey
	QueryMeta
}

// String names a variable for errors.
func (m *VariableMetadata) String() string { return fmt.Sprintf("%s@%s", m.Path, m.Namespace) }

// Workload identities: a token per task that the servers can verify
// (server/workload_identity.go), signed with a key derived from the
// active root key.

// WorkloadIdentityClaims are a workload identity's claims (Nomad's
// names).
type WorkloadIdentityClaims struct {
	Namespace    string `json:"nomad_namespace"`
	JobID        string `json:"nomad_job_id"`
	AllocationID string `json:"nomad_allocation_id"`
	Task         string `json:"nomad_task"`
	Subject      string `json:"sub"`
	Audience     string `json:"aud"`
	IssuedAt     int64  `json:"iat"`
	NotBefore    int64  `json:"nbf"`
}

// AllocIdentitiesRequest asks for the workload identities of tasks of an
// allocation on the calling node (RPC Alloc.SignIdentities), with the
// node's secret.
type AllocIdentitiesRequest struct {
	NodeID   string
	SecretID string `codec:",omitempty"`
	AllocID  string
	Tasks    []string
	QueryOptions
}

// SignedWorkloadIdentity is one task's identity token.
type SignedWorkloadIdentity struct {
	Task string
	JWT  string
}

// AllocIdentitiesResponse answers AllocIdentitiesRequest, one identity
// per task asked for.
type AllocIdentitiesResponse struct {
	Identities []*SignedWorkloadIdentity
	QueryMeta
}

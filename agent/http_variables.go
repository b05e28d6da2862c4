package agent

import (
	"net/http"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// Variables and the keyring over HTTP, in Nomad's shapes: /v1/vars,
// /v1/var/<path> (GET, PUT/POST with ?cas=, DELETE with ?cas=), and
// /v1/operator/keyring/{keys,rotate}. consul-template's nomadVar and
// nomadVarList read the same two paths.

// registerVariables mounts the variables and keyring endpoints.
func (h *httpAPI) registerVariables(handle func(string, handlerFunc)) {
	handle("GET /v1/vars", h.variablesList)
	handle("GET /v1/var/{path...}", h.variableGet)
	handle("PUT /v1/var/{path...}", h.variablePut)
	handle("POST /v1/var/{path...}", h.variablePut)
	handle("DELETE /v1/var/{path...}", h.variableDelete)
	handle("GET /v1/operator/keyring/keys", h.keyringList)
	handle("PUT /v1/operator/keyring/rotate", h.keyringRotate)
	handle("POST /v1/operator/keyring/rotate", h.keyringRotate)
}

// variableHTTP is the body of a variable write: Nomad's api.Variable.
type variableHTTP struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	ModifyIndex uint64
	CreateTime  int64
	ModifyTime  int64
	Items       structs.VariableItems
	Lock        any
}

// refuseVariableLocks answers Nomad's variable lock operations.
func refuseVariableLocks(r *http.Request) error {
	q := r.URL.Query()
	for _, op := range []string{"lock-acquire", "lock-release", "lock-renew"} {
		if q.Has(op) {
			return structs.NewError(structs.ErrCodeUnsupported, "Drover does not support variable locks (?%s)", op)
		}
	}
	return nil
}

// parseCAS reads ?cas=<index>.
func parseCAS(r *http.Request) (bool, uint64, error) {
	s := r.URL.Query().Get("cas")
	if s == "" {
		return false, 0, nil
	}
	idx, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return true, 0, badRequest("can not parse cas: %v", err)
	}
	return true, idx, nil
}

func variablePath(r *http.Request) (string, error) {
	p := r.PathValue("path")
	if p == "" {
		return "", badRequest("missing variable path")
	}
	return p, nil
}

// GET /v1/vars?prefix=&namespace=: metadata only.
func (h *httpAPI) variablesList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.VariablesListRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	var out structs.VariablesListResponse
	if err := h.srv.RPC("Variables.List", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return paginate(w, page, out.Data, func(m *structs.VariableMetadata) string { return m.Namespace + "." + m.Path }), nil
}

// GET /v1/var/<path>: the variable, or 404 "variable not found".
func (h *httpAPI) variableGet(w http.ResponseWriter, r *http.Request) (any, error) {
	path, err := variablePath(r)
	if err != nil {
		return nil, err
	}
	args := structs.VariablesReadRequest{Path: path}
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.VariablesReadResponse
	if err := h.srv.RPC("Variables.Read", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	if out.Data == nil {
		return nil, notFound("variable not found")
	}
	return out.Data, nil
}

// PUT|POST /v1/var/<path>[?cas=<index>]: body api.Variable; answers the
// variable written, or 409 with the current one on a CAS conflict.
func (h *httpAPI) variablePut(w http.ResponseWriter, r *http.Request) (any, error) {
	path, err := variablePath(r)
	if err != nil {
		return nil, err
	}
	if err := refuseVariableLocks(r); err != nil {
		return nil, err
	}
	var body variableHTTP
	if err := decodeBody(w, r, &body); err != nil {
		return nil, err
	}
	if body.Lock != nil {
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support variable locks (Lock)")
	}
	if len(body.Items) == 0 {
		return nil, badRequest("variable missing required Items object")
	}
	args := structs.VariablesApplyRequest{Op: structs.VarOpSet, Var: &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: body.Namespace, Path: path}, Items: body.Items}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	if args.Var.Namespace == "" {
		args.Var.Namespace = args.RequestNamespace()
	}
	isCAS, index, err := parseCAS(r)
	if err != nil {
		return nil, err
	}
	if isCAS {
		args.Op, args.Var.ModifyIndex = structs.VarOpCAS, index
	}
	return h.variableApply(w, &args)
}

// DELETE /v1/var/<path>[?cas=<index>]: 204, or 409 with the current
// variable on a CAS conflict.
func (h *httpAPI) variableDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	path, err := variablePath(r)
	if err != nil {
		return nil, err
	}
	if err := refuseVariableLocks(r); err != nil {
		return nil, err
	}
	args := structs.VariablesApplyRequest{Op: structs.VarOpDelete, Var: &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Path: path}}}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	args.Var.Namespace = args.RequestNamespace()
	isCAS, index, err := parseCAS(r)
	if err != nil {
		return nil, err
	}
	if isCAS {
		args.Op, args.Var.ModifyIndex = structs.VarOpDeleteCAS, index
	}
	out, err := h.variableApply(w, &args)
	if out != nil || err != nil {
		return out, err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil, nil
}

// variableApply sends a write and shapes its answer: the conflict (409,
// X-Nomad-Index the current variable's index) or the output.
func (h *httpAPI) variableApply(w http.ResponseWriter, args *structs.VariablesApplyRequest) (any, error) {
	var out structs.VariablesApplyResponse
	if err := h.srv.RPC("Variables.Apply", args, &out); err != nil {
		return nil, err
	}
	if out.IsConflict() {
		setIndex(w, out.Conflict.ModifyIndex)
		return withStatus{code: http.StatusConflict, body: out.Conflict}, nil
	}
	setIndex(w, out.Index)
	if out.Output == nil {
		return nil, nil
	}
	return out.Output, nil
}

// GET /v1/operator/keyring/keys: the root keys' metadata.
func (h *httpAPI) keyringList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.KeyringListRootKeyMetaRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.KeyringListRootKeyMetaResponse
	if err := h.srv.RPC("Keyring.ListRootKeyMeta", &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &out.QueryMeta)
	return nonNil(out.Keys), nil
}

// PUT|POST /v1/operator/keyring/rotate?algo=&full=: a new active key;
// answers {"Key": RootKeyMeta}.
func (h *httpAPI) keyringRotate(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	if q.Get("publish_time") != "" {
		return nil, structs.NewError(structs.ErrCodeUnsupported, "Drover does not support prepublished root keys (?publish_time)")
	}
	full, err := boolParam(r, "full")
	if err != nil {
		return nil, err
	}
	args := structs.KeyringRotateRootKeyRequest{Algorithm: q.Get("algo"), Full: full}
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	var out structs.KeyringRotateRootKeyResponse
	if err := h.srv.RPC("Keyring.Rotate", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return struct{ Key *structs.RootKeyMeta }{out.Key}, nil
}

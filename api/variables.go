package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-project/drover/structs"
)

// CASConflictError is a variable write or delete refused by its
// check-and-set: Conflict is the variable as the servers hold it (only
// its namespace and path when there is none; no items when the token may
// not read it).
type CASConflictError struct {
	CheckIndex uint64
	Conflict   *structs.VariableDecrypted
}

func (e *CASConflictError) Error() string {
	return fmt.Sprintf("cas conflict: expected ModifyIndex %d; found %d", e.CheckIndex, e.Conflict.ModifyIndex)
}

// variablePath escapes a variable path for the URL, keeping its slashes.
func variablePath(path string) string {
	parts := strings.Split(strings.Trim(path, " /"), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/v1/var/" + strings.Join(parts, "/")
}

// Variable reads one variable (an error satisfying IsNotFound if there is
// none).
func (c *Client) Variable(ctx context.Context, path string, q *QueryOptions) (*structs.VariableDecrypted, *QueryMeta, error) {
	var out structs.VariableDecrypted
	qm, err := c.query(ctx, variablePath(path), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Variables lists variables' metadata (q.Prefix on paths).
func (c *Client) Variables(ctx context.Context, q *QueryOptions) ([]*structs.VariableMetadata, *QueryMeta, error) {
	var out []*structs.VariableMetadata
	qm, err := c.query(ctx, "/v1/vars", q, &out)
	return out, qm, err
}

// PutVariable writes v. With cas set, it is written only if the stored
// variable's ModifyIndex is *cas (0: only if none exists); a refusal is a
// *CASConflictError.
func (c *Client) PutVariable(ctx context.Context, v *structs.VariableDecrypted, cas *uint64, w *WriteOptions) (*structs.VariableDecrypted, *WriteMeta, error) {
	var params url.Values
	if cas != nil {
		params = url.Values{"cas": {strconv.FormatUint(*cas, 10)}}
	}
	var out structs.VariableDecrypted
	wm, err := c.write(ctx, http.MethodPut, variablePath(v.Path), params, w, v, &out)
	if err != nil {
		return nil, nil, casError(err, cas)
	}
	return &out, wm, nil
}

// DeleteVariable removes a variable; with cas set, only if its
// ModifyIndex is *cas (a refusal is a *CASConflictError).
func (c *Client) DeleteVariable(ctx context.Context, path string, cas *uint64, w *WriteOptions) (*WriteMeta, error) {
	var params url.Values
	if cas != nil {
		params = url.Values{"cas": {strconv.FormatUint(*cas, 10)}}
	}
	wm, err := c.write(ctx, http.MethodDelete, variablePath(path), params, w, nil, nil)
	if err != nil {
		return nil, casError(err, cas)
	}
	return wm, nil
}

// casError turns a 409 carrying a variable into a *CASConflictError.
func casError(err error, cas *uint64) error {
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusConflict {
		return err
	}
	var v structs.VariableDecrypted
	if json.Unmarshal([]byte(se.Body), &v) != nil {
		return err
	}
	ce := &CASConflictError{Conflict: &v}
	if cas != nil {
		ce.CheckIndex = *cas
	}
	return ce
}

// RootKeys lists the keyring's keys.
func (c *Client) RootKeys(ctx context.Context, q *QueryOptions) ([]*structs.RootKeyMeta, *QueryMeta, error) {
	var out []*structs.RootKeyMeta
	qm, err := c.query(ctx, "/v1/operator/keyring/keys", q, &out)
	return out, qm, err
}

// RotateRootKey makes a new active key; full also re-encrypts every
// variable with it.
func (c *Client) RotateRootKey(ctx context.Context, full bool, w *WriteOptions) (*structs.RootKeyMeta, *WriteMeta, error) {
	var params url.Values
	if full {
		params = url.Values{"full": {"true"}}
	}
	var out struct{ Key *structs.RootKeyMeta }
	wm, err := c.write(ctx, http.MethodPut, "/v1/operator/keyring/rotate", params, w, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return out.Key, wm, nil
}

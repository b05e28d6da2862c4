package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
)

// SnapshotSave streams an operator snapshot archive of the cluster's state.
// The caller closes the reader; size is the archive's length (or -1).
func (c *Client) SnapshotSave(ctx context.Context, q *QueryOptions) (rc io.ReadCloser, size int64, index uint64, err error) {
	resp, err := c.doRaw(ctx, http.MethodGet, "/v1/operator/snapshot", q.values(), nil, "")
	if err != nil {
		return nil, 0, 0, err
	}
	qm := parseQueryMeta(resp.Header)
	size = resp.ContentLength
	if n, perr := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64); perr == nil {
		size = n
	}
	return resp.Body, size, qm.LastIndex, nil
}

// SnapshotRestore restores an operator snapshot archive into the cluster.
func (c *Client) SnapshotRestore(ctx context.Context, archive io.Reader, w *WriteOptions) error {
	resp, err := c.doRaw(ctx, http.MethodPut, "/v1/operator/snapshot", w.values(), archive, "application/octet-stream")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// maxSnapshotBytes bounds an uploaded snapshot archive.
const maxSnapshotBytes = 4 << 30

// GET /v1/operator/snapshot: an archive of the whole state, taken on the
// leader (fsm.WriteArchive's format), as application/octet-stream. The
// Digest header ("sha-256=" and the base64 of the body's SHA-256, RFC
// 3230) is what Nomad's client checks the body against; the archive is
// whole in memory before it is sent, so it is computed up front.
func (h *httpAPI) snapshotSave(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := h.parseQuery(w, r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out structs.SnapshotSaveResponse
	if err := h.srv.RPC("Operator.SnapshotSave", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(out.Archive)))
	w.Header().Set("Digest", archiveDigest(out.Archive))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(out.Archive); err != nil {
		h.logger.Warn("sending snapshot failed", "error", err)
	}
	return nil, nil
}

// archiveDigest is the RFC 3230 Digest header value of body.
func archiveDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=" + base64.StdEncoding.EncodeToString(sum[:])
}

// PUT /v1/operator/snapshot: restore the archive in the body. The body
// goes to the leader in chunks as it is read (server.RestoreSnapshot), and
// the leader writes it to disk; no agent holds it in memory. A damaged
// archive is refused (400) before anything changes; one over 4 GiB gets
// 400 too.
func (h *httpAPI) snapshotRestore(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.WriteRequest
	if err := h.parseWrite(r, &args); err != nil {
		return nil, err
	}
	body := http.MaxBytesReader(w, r.Body, maxSnapshotBytes)
	index, err := server.RestoreSnapshot(h.srv.RPC, body, args)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, structs.NewError(structs.ErrCodeTooLarge, "snapshot larger than %d bytes", maxSnapshotBytes)
		}
		var se *structs.Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, badRequest("reading snapshot: %v", err)
	}
	setIndex(w, index)
	return nil, nil
}

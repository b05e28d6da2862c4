package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"

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

// PUT /v1/operator/snapshot: restore the archive in the body. A damaged
// archive is refused (400) before anything changes.
func (h *httpAPI) snapshotRestore(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.SnapshotRestoreRequest
	if err := h.parseWrite(r, &args.WriteRequest); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSnapshotBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, structs.NewError(structs.ErrCodeTooLarge, "snapshot larger than %d bytes", maxSnapshotBytes)
		}
		return nil, badRequest("reading snapshot: %v", err)
	}
	if len(body) == 0 {
		return nil, badRequest("the request body must be a snapshot archive")
	}
	args.Archive = body
	var out structs.GenericResponse
	if err := h.srv.RPC("Operator.SnapshotRestore", &args, &out); err != nil {
		return nil, err
	}
	setIndex(w, out.Index)
	return nil, nil
}

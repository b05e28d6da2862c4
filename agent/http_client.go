package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/drover-project/drover/structs"
)

// LocalClient is what the HTTP API needs from the agent's own client, if
// it runs one; *client.Client satisfies it.
type LocalClient interface {
	NodeID() string
	// TaskLogs streams a task's "stdout" or "stderr". offset >= 0 starts
	// that far into the oldest file kept, < 0 that far before the end.
	TaskLogs(allocID, task, logType string, follow bool, offset int64) (io.ReadCloser, error)
}

// HTTPOption configures NewHTTPHandler.
type HTTPOption func(*httpAPI)

// WithLocalClient serves the client endpoints (task logs) from c and
// names its node in /v1/agent/self (stats.client.node_id), which
// `drover node status -self` reads.
func WithLocalClient(c LocalClient) HTTPOption {
	return func(h *httpAPI) { h.client = c }
}

// Limits of the log stream.
const (
	logFrameBytes     = 64 << 10
	logHeartbeatEvery = 10 * time.Second
)

// logFrame is one frame of a framed log stream, Nomad's StreamFrame:
// Data is base64 in JSON. A frame with no fields is a heartbeat.
type logFrame struct {
	Offset int64  `json:",omitempty"`
	Data   []byte `json:",omitempty"`
	File   string `json:",omitempty"`
}

// GET /v1/client/fs/logs/<alloc>?task=&type=stdout|stderr&follow=&origin=start|end&offset=&plain=:
// a task's log from this agent's client. With plain=true the bytes are
// sent as they are; otherwise as a stream of JSON frames (Nomad's shape).
// The allocation must run on this agent's client: clients tell the
// servers their HTTP address (Node.HTTPAddr) so callers can find it.
func (h *httpAPI) clientLogs(w http.ResponseWriter, r *http.Request) (any, error) {
	if h.client == nil {
		return nil, structs.NewError(structs.ErrCodeUnsupported,
			"Drover does not support client endpoints on an agent without a client; ask the agent on the allocation's node")
	}
	q := r.URL.Query()
	task := q.Get("task")
	if task == "" {
		return nil, badRequest("Missing task: give ?task=<name>")
	}
	logType := q.Get("type")
	if logType == "" {
		logType = "stdout"
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		return nil, err
	}
	plain, err := boolParam(r, "plain")
	if err != nil {
		return nil, err
	}
	var offset int64
	if s := q.Get("offset"); s != "" {
		if offset, err = strconv.ParseInt(s, 10, 64); err != nil || offset < 0 {
			return nil, badRequest("Invalid offset %q: must be a non-negative integer", s)
		}
	}
	skip := 0
	switch origin := q.Get("origin"); origin {
	case "", "start":
	case "end":
		// The client counts back from the end with a negative offset; 0
		// from the end is "one byte back, then drop it".
		if offset == 0 {
			offset, skip = 1, 1
		}
		offset = -offset
	default:
		return nil, badRequest("Invalid origin %q: want start or end", origin)
	}

	rc, err := h.client.TaskLogs(r.PathValue("alloc"), task, logType, follow, offset)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if follow {
		// A followed log outlives any write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	if plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	file := fmt.Sprintf("alloc/logs/%s.%s", task, logType)
	h.streamLog(w, r, rc, plain, file, skip)
	return nil, nil
}

// streamLog copies rc to w until it ends or the request is cancelled,
// flushing each chunk; framed streams get a heartbeat frame when a
// followed log is quiet.
func (h *httpAPI) streamLog(w http.ResponseWriter, r *http.Request, rc io.ReadCloser, plain bool, file string, skip int) {
	type chunk struct {
		data []byte
		err  error
	}
	chunks := make(chan chunk)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			buf := make([]byte, logFrameBytes)
			n, err := rc.Read(buf)
			select {
			case chunks <- chunk{buf[:n], err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	rcw := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	heartbeat := time.NewTicker(logHeartbeatEvery)
	defer heartbeat.Stop()
	var offset int64
	for {
		select {
		case <-r.Context().Done():
			_ = rc.Close() // unblocks the reader
			return
		case <-heartbeat.C:
			if !plain {
				if err := enc.Encode(logFrame{}); err != nil {
					return
				}
				_ = rcw.Flush()
			}
		case c := <-chunks:
			data := c.data
			if skip > 0 {
				n := min(skip, len(data))
				data, skip = data[n:], skip-n
			}
			if len(data) > 0 {
				var err error
				if plain {
					_, err = w.Write(data)
				} else {
					err = enc.Encode(logFrame{Offset: offset, Data: data, File: file})
				}
				if err != nil {
					return
				}
				offset += int64(len(data))
				_ = rcw.Flush()
			}
			if c.err != nil {
				if !errors.Is(c.err, io.EOF) {
					h.logger.Warn("log stream ended", "file", file, "error", c.err)
				}
				return
			}
		}
	}
}

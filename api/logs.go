package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// TaskLogs streams a task's "stdout" or "stderr" as plain bytes from the
// agent's own client; the allocation must run there (an allocation's node
// tells its agent's address in Node.HTTPAddr). origin is "start" or
// "end" and offset counts bytes from it. With follow the stream stays
// open for more output until the task is dead or ctx is done. The caller
// must Close the reader.
func (c *Client) TaskLogs(ctx context.Context, allocID, task, logType string, follow bool, origin string, offset int64) (io.ReadCloser, error) {
	params := url.Values{
		"task":   {task},
		"type":   {logType},
		"follow": {strconv.FormatBool(follow)},
		"origin": {origin},
		"offset": {strconv.FormatInt(offset, 10)},
		"plain":  {"true"},
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/client/fs/logs/"+url.PathEscape(allocID), params, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

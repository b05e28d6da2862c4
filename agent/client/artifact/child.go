package artifact

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"time"

	cleanhttp "github.com/hashicorp/go-cleanhttp"
	getter "github.com/hashicorp/go-getter/v2"

	"github.com/drover-project/drover/structs"
)

// The child is started with argv[0] childArg0 and childEnvVar=1 (both, so
// that neither alone turns a program into it).
const (
	childEnvVar = "DROVER_ARTIFACT_GETTER"
	childArg0   = "drover-artifact-getter"
	maxParams   = 1 << 20
)

// params is what the client hands the child on stdin.
type params struct {
	Source   string
	Dst      string // a path in the staging directory (not there yet)
	Mode     string
	Insecure bool
	Headers  map[string]string
	Pwd      string // the task directory: relative local sources
	AllocDir string // local sources must lie inside it

	HTTPReadTimeout     time.Duration
	HTTPMaxBytes        int64
	VCSTimeout          time.Duration
	DecompressFileCount int
	DecompressSize      int64
}

func (p *params) encode() ([]byte, error) { return json.Marshal(p) }

// init turns this executable into the artifact getter child when the
// client started it as one (the re-exec pattern): it works in drover and
// in every test binary that links this package. It never returns in the
// child.
func init() {
	if os.Getenv(childEnvVar) != "1" || len(os.Args) == 0 || os.Args[0] != childArg0 {
		return
	}
	os.Exit(runChild(os.Stdin, os.Stderr))
}

// runChild fetches what stdin describes and returns the exit code; a
// failure's message goes to errOut.
func runChild(in io.Reader, errOut io.Writer) int {
	var p params
	buf, err := io.ReadAll(io.LimitReader(in, maxParams))
	if err == nil {
		err = json.Unmarshal(buf, &p)
	}
	if err != nil {
		fmt.Fprintf(errOut, "artifact getter: reading parameters: %v\n", err)
		return 2
	}
	if err := p.fetch(context.Background()); err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	return 0
}

// umask keeps setuid and setgid bits off everything fetched.
const umask = fs.ModeSetuid | fs.ModeSetgid

// fetch runs go-getter with the safest settings Nomad uses.
func (p *params) fetch(ctx context.Context) error {
	root, err := os.OpenRoot(p.AllocDir)
	if err != nil {
		return err
	}
	defer root.Close()
	headers := make(http.Header, len(p.Headers))
	for k, v := range p.Headers {
		headers.Set(k, v)
	}
	httpClient := cleanhttp.DefaultPooledClient()
	if p.Insecure {
		httpClient.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the job asks for it (insecure = true)
	}
	// go-getter's MaxBytes cuts a body short silently: a body past the
	// limit fails the fetch instead.
	httpClient.Transport = &limitTransport{base: httpClient.Transport, max: p.HTTPMaxBytes}
	httpGetter := &getter.HttpGetter{
		Netrc:  true,
		Client: httpClient,
		Header: headers,
		// No X-Terraform-Get redirections to other getters, no HEAD
		// request first (a changed resource could corrupt a retry).
		XTerraformGetDisabled: true,
		DoNotCheckHeadFirst:   true,
		ReadTimeout:           p.HTTPReadTimeout,
	}
	c := &getter.Client{
		Getters: []getter.Getter{
			&vcsGetter{Getter: &getter.GitGetter{
				Detectors: []getter.Detector{new(getter.GitHubDetector), new(getter.GitDetector),
					new(getter.BitBucketDetector), new(getter.GitLabDetector)},
				Timeout: p.VCSTimeout,
			}},
			&vcsGetter{Getter: &getter.HgGetter{Timeout: p.VCSTimeout}},
			httpGetter,
			&localGetter{root: root, allocDir: p.AllocDir},
		},
		Decompressors:   getter.LimitedDecompressors(p.DecompressFileCount, p.DecompressSize),
		DisableSymlinks: true,
	}
	mode := getter.ModeAny
	src := p.Source
	switch p.Mode {
	case structs.GetterModeFile:
		// A file is written as fetched: an archive is unpacked in file
		// mode only when the archive option names its format.
		mode = getter.ModeFile
		src = keepArchive(src)
	case structs.GetterModeDir:
		mode = getter.ModeDir
	}
	_, err = c.Get(ctx, &getter.Request{Src: src, Dst: p.Dst, Pwd: p.Pwd, GetMode: mode,
		Umask: umask, Copy: true, DisableSymlinks: true})
	return err
}

// keepArchive adds archive=false to a source that names no archive
// format, so that go-getter does not unpack it.
func keepArchive(src string) string {
	u, err := url.Parse(src)
	if err != nil || u.Query().Has("archive") || u.Opaque != "" {
		return src
	}
	q := u.Query()
	q.Set("archive", "false")
	u.RawQuery = q.Encode()
	return u.String()
}

// limitTransport fails a response body that runs past max bytes.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || t.max <= 0 {
		return resp, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("the download is %d bytes, more than the limit of %d", resp.ContentLength, t.max)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errTooLarge
	}
	return n, err
}

var errTooLarge = errors.New("the download is larger than the limit (http_max_size)")

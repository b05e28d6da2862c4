package structs

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Artifact getter modes (an artifact block's mode), as in Nomad: what the
// source is taken to be.
const (
	// GetterModeAny lets the getter decide: an archive is unpacked into
	// the destination directory, a single file is written into it.
	GetterModeAny = "any"
	// GetterModeFile writes the source to the destination as one file.
	GetterModeFile = "file"
	// GetterModeDir takes the source to be a directory (or an archive of
	// one) written into the destination directory.
	GetterModeDir = "dir"
)

// ArtifactChecksumOption is the getter option that names the checksum
// ("type:hex") a download must have.
const ArtifactChecksumOption = "checksum"

// DefaultArtifactDestDir is where an artifact goes when its block names
// no destination and is not a single file: the task's local directory, as
// Nomad's server defaults it.
const DefaultArtifactDestDir = "local/"

const (
	maxArtifactsPerTask = 100
	maxArtifactField    = 8192 // bytes of a source, destination, option or header
)

// checksumSizes are the checksum types a checksum option may name, with
// the length of their digests, as Nomad validates them.
var checksumSizes = map[string]int{"md5": md5.Size, "sha1": sha1.Size, "sha256": sha256.Size, "sha512": sha512.Size}

// unsupportedGetters are go-getter protocols that Nomad's client has and
// Drover's does not, by the name a forced getter ("s3::") or a URL scheme
// uses, with what the refusal says.
var unsupportedGetters = map[string]string{
	"s3": "S3 artifact sources", "gcs": "Google Cloud Storage artifact sources",
	"gs": "Google Cloud Storage artifact sources", "smb": "SMB artifact sources",
}

// TaskArtifact is a task's artifact block in Nomad's shape: something the
// client fetches with go-getter into the task's directory before the task
// starts. Source, destination, options and headers may hold ${...}
// references, which the client resolves against the task's environment.
type TaskArtifact struct {
	// GetterSource is what to fetch: a URL (http, https, git, hg, a local
	// file) in go-getter's syntax.
	GetterSource string
	// GetterOptions are added to the source URL's query: checksum,
	// archive, sshkey, ref, depth, ...
	GetterOptions map[string]string
	// GetterHeaders are the request headers of an http(s) download.
	GetterHeaders map[string]string
	// GetterMode is any, file or dir (GetterMode* constants).
	GetterMode string
	// GetterInsecure skips TLS certificate verification.
	GetterInsecure bool
	// RelativeDest is where the artifact goes, relative to the task's
	// directory (or an absolute path inside the allocation directory).
	RelativeDest string
	// Chown gives the fetched files to the task's user (when the client
	// runs as root and the task names a user).
	Chown bool
}

// DefaultArtifactDest is the destination Nomad's server gives an artifact
// block that names none: local/<last element of the source> for a single
// file, else local/.
func DefaultArtifactDest(source, mode string) string {
	if mode == GetterModeFile {
		return filepath.Join("local", path.Base(source))
	}
	return DefaultArtifactDestDir
}

// canonicalize fills the mode an artifact left empty (any); the
// destination's default depends on whether it was null, which only the
// decoders see (jobspec).
func (a *TaskArtifact) canonicalize() {
	if a.GetterMode == "" {
		a.GetterMode = GetterModeAny
	}
	if len(a.GetterOptions) == 0 {
		a.GetterOptions = nil
	}
	if len(a.GetterHeaders) == 0 {
		a.GetterHeaders = nil
	}
}

// Copy returns a deep copy of the artifact.
func (a *TaskArtifact) Copy() *TaskArtifact {
	if a == nil {
		return nil
	}
	c := *a
	c.GetterOptions = maps.Clone(a.GetterOptions)
	c.GetterHeaders = maps.Clone(a.GetterHeaders)
	return &c
}

// validateArtifacts checks a task's artifact blocks as Nomad's server
// does (a source, a destination inside the allocation directory, a known
// mode, a checksum option that parses), and refuses sources whose getter
// Drover's client does not have.
func validateArtifacts(v *validator, p string, as []*TaskArtifact) {
	if len(as) > maxArtifactsPerTask {
		v.add(join(p, "Artifacts"), "at most %d artifacts per task; got %d", maxArtifactsPerTask, len(as))
		return
	}
	for i, a := range as {
		ap := join(p, indexed("Artifacts", i))
		if a == nil {
			v.add(ap, "must not be null")
			continue
		}
		a.validate(v, ap)
	}
}

func (a *TaskArtifact) validate(v *validator, p string) {
	switch src := strings.TrimSpace(a.GetterSource); {
	case src == "":
		v.add(join(p, "GetterSource"), "must be set (the artifact's source)")
	case len(a.GetterSource) > maxArtifactField:
		v.add(join(p, "GetterSource"), "must be at most %d bytes", maxArtifactField)
	case strings.ContainsAny(a.GetterSource, "\x00\r\n"):
		v.add(join(p, "GetterSource"), "must not contain NUL or line breaks")
	default:
		if what := unsupportedGetter(src); what != "" {
			v.add(join(p, "GetterSource"), "Drover does not support %s (%q); use an http(s), git, hg or local file source", what, a.GetterSource)
		}
	}
	switch {
	case len(a.RelativeDest) > maxArtifactField:
		v.add(join(p, "RelativeDest"), "must be at most %d bytes", maxArtifactField)
	case strings.ContainsRune(a.RelativeDest, 0):
		v.add(join(p, "RelativeDest"), "must not contain NUL")
	case DestinationEscapes(a.RelativeDest):
		v.add(join(p, "RelativeDest"), "destination %q escapes the allocation directory", a.RelativeDest)
	}
	switch a.GetterMode {
	case GetterModeAny, GetterModeFile, GetterModeDir:
	default:
		v.add(join(p, "GetterMode"), "must be one of any, file, dir; got %q", a.GetterMode)
	}
	for _, k := range slices.Sorted(maps.Keys(a.GetterOptions)) {
		val := a.GetterOptions[k]
		if k == "" || len(k)+len(val) > maxArtifactField || strings.ContainsRune(k+val, 0) {
			v.add(join(p, "GetterOptions"), "invalid option %q", k)
		}
	}
	if sum, ok := a.GetterOptions[ArtifactChecksumOption]; ok {
		if msg := checkChecksum(sum); msg != "" {
			v.add(join(p, `GetterOptions["checksum"]`), "%s", msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.GetterHeaders)) {
		val := a.GetterHeaders[k]
		switch {
		case !validHeaderName(k):
			v.add(join(p, "GetterHeaders"), "invalid header name %q", k)
		case len(val) > maxArtifactField || strings.ContainsAny(val, "\x00\r\n"):
			v.add(join(p, "GetterHeaders"), "invalid value for header %q (at most %d bytes, no NUL or line breaks)", k, maxArtifactField)
		}
	}
}

// checkChecksum returns what is wrong with a checksum option, "type:hex"
// with type md5, sha1, sha256 or sha512 and a digest of that type's
// length, as Nomad checks it; "" when it is fine. A value holding a
// ${...} reference is checked by the client once resolved.
func checkChecksum(sum string) string {
	sum = strings.TrimSpace(sum)
	if sum == "" {
		return "checksum must not be empty"
	}
	if strings.Contains(sum, "${") {
		return ""
	}
	typ, digest, ok := strings.Cut(sum, ":")
	if !ok || strings.Contains(digest, ":") {
		return fmt.Sprintf(`checksum must be given as "type:value"; got %q`, sum)
	}
	size, known := checksumSizes[typ]
	if !known {
		return fmt.Sprintf("unsupported checksum type %q: must be md5, sha1, sha256 or sha512", typ)
	}
	b, err := hex.DecodeString(digest)
	if err != nil || len(b) != size {
		return fmt.Sprintf("invalid %s checksum %q: must be %d hexadecimal digits", typ, digest, 2*size)
	}
	return ""
}

// unsupportedGetter names the getter of src when Drover's client does not
// have it (a forced "s3::" or a "gs://" URL), else "".
func unsupportedGetter(src string) string {
	if forced, _, ok := strings.Cut(src, "::"); ok && !strings.ContainsAny(forced, "/:") {
		return unsupportedGetters[strings.ToLower(forced)]
	}
	if u, err := url.Parse(src); err == nil {
		return unsupportedGetters[strings.ToLower(u.Scheme)]
	}
	return ""
}

// validHeaderName reports whether k is an HTTP field name (a token).
func validHeaderName(k string) bool {
	if k == "" || len(k) > 256 {
		return false
	}
	for _, c := range []byte(k) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

package template

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/consul-template/renderer"
)

// render is consul-template's renderer for this Manager: it writes the
// destination through the allocation directory's os.Root, so that no
// path, and no symlink on the way or at the end of it, leads out of the
// allocation directory (CVE-2024-1329). The file is written beside its
// destination under a temporary name, given its mode and owner, and
// renamed into place, so a task never reads half a file. Unchanged
// contents (and owner) are not written again.
func (m *Manager) render(in *renderer.RenderInput) (*renderer.RenderResult, error) {
	rel, err := m.relInAlloc(in.Path)
	if err != nil {
		return nil, err
	}
	opts, ok := m.files[in.Path]
	if !ok {
		opts = fileOpts{uid: -1, gid: -1}
	}
	existing, err := m.root.ReadFile(rel)
	switch {
	case err == nil:
		if bytes.Equal(existing, in.Contents) && m.ownedAsAsked(rel, opts) {
			return &renderer.RenderResult{WouldRender: true, Contents: existing}, nil
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	dir := filepath.Dir(rel)
	if err := m.root.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(dir, ".drover-template-"+hex.EncodeToString(suffix[:]))
	f, err := m.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	done := false
	defer func() {
		if !done {
			_ = m.root.Remove(tmp)
		}
	}()
	_, werr := f.Write(in.Contents)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, werr)
	}
	perms := in.Perms
	if perms == 0 {
		perms = renderer.DefaultFilePerms
	}
	if err := m.root.Chmod(tmp, perms); err != nil {
		return nil, fmt.Errorf("setting the mode of %s: %w", rel, err)
	}
	if opts.uid >= 0 || opts.gid >= 0 {
		if err := m.root.Lchown(tmp, opts.uid, opts.gid); err != nil {
			return nil, fmt.Errorf("setting the owner of %s: %w", rel, err)
		}
	}
	if err := m.root.Rename(tmp, rel); err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	done = true
	return &renderer.RenderResult{DidRender: true, WouldRender: true, Contents: in.Contents}, nil
}

// ownedAsAsked reports whether the file at rel has the owner the template
// asks for (always, when it asks for none).
func (m *Manager) ownedAsAsked(rel string, opts fileOpts) bool {
	if opts.uid < 0 && opts.gid < 0 {
		return true
	}
	fi, err := m.root.Lstat(rel)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return (opts.uid < 0 || int(st.Uid) == opts.uid) && (opts.gid < 0 || int(st.Gid) == opts.gid)
}

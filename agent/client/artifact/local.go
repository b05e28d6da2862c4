package artifact

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	getter "github.com/hashicorp/go-getter/v2"
)

// vcsGetter is a git or hg getter that takes only network repositories:
// a file:// repository could read the client's disk outside the
// allocation directory, and git's ext:: runs commands.
type vcsGetter struct{ getter.Getter }

var vcsSchemes = map[string]bool{"http": true, "https": true, "ssh": true, "git": true}

func (g *vcsGetter) check(req *getter.Request) error {
	u := req.URL()
	if u == nil || !vcsSchemes[u.Scheme] {
		scheme := ""
		if u != nil {
			scheme = u.Scheme
		}
		return fmt.Errorf("repository source %q: the scheme %q is not allowed (use https, http, ssh or git)", req.Src, scheme)
	}
	return nil
}

func (g *vcsGetter) Get(ctx context.Context, req *getter.Request) error {
	if err := g.check(req); err != nil {
		return err
	}
	return g.Getter.Get(ctx, req)
}

func (g *vcsGetter) GetFile(ctx context.Context, req *getter.Request) error {
	if err := g.check(req); err != nil {
		return err
	}
	return g.Getter.GetFile(ctx, req)
}

// localGetter reads local files and directories, only inside the
// allocation directory (Nomad's sandbox lets its getter read nothing
// else): through an os.Root there, so no path or symlink leads out. A
// directory is copied, never linked; a symlink in it fails the fetch.
type localGetter struct {
	getter.FileGetter
	root     *os.Root
	allocDir string
}

// rel is the source's path relative to the allocation directory.
func (g *localGetter) rel(u *url.URL) (string, error) {
	p := u.Path
	if u.RawPath != "" {
		p = u.RawPath
	}
	if !filepath.IsAbs(p) || !within(filepath.Clean(p), g.allocDir) {
		return "", fmt.Errorf("local source %q %w: a local artifact must be inside it", p, ErrEscapes)
	}
	return filepath.Rel(g.allocDir, filepath.Clean(p))
}

func (g *localGetter) Mode(_ context.Context, u *url.URL) (getter.Mode, error) {
	rel, err := g.rel(u)
	if err != nil {
		return 0, err
	}
	fi, err := g.root.Stat(rel)
	if err != nil {
		return 0, err
	}
	if fi.IsDir() {
		return getter.ModeDir, nil
	}
	return getter.ModeFile, nil
}

func (g *localGetter) GetFile(ctx context.Context, req *getter.Request) error {
	rel, err := g.rel(req.URL())
	if err != nil {
		return err
	}
	return g.copyFile(ctx, rel, req.Dst, req)
}

func (g *localGetter) copyFile(ctx context.Context, rel, dst string, req *getter.Request) error {
	src, err := g.root.Open(rel)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("local source %q is not a regular file", rel)
	}
	if err := os.MkdirAll(filepath.Dir(dst), req.Mode(0o755)); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, req.Mode(fi.Mode().Perm()))
	if err != nil {
		return err
	}
	_, err = getter.Copy(ctx, out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Get copies a directory, walking it through the root.
func (g *localGetter) Get(ctx context.Context, req *getter.Request) error {
	rel, err := g.rel(req.URL())
	if err != nil {
		return err
	}
	return fs.WalkDir(g.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sub, _ := filepath.Rel(rel, p)
		dst := filepath.Join(req.Dst, sub)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, req.Mode(0o755))
		case d.Type().IsRegular():
			return g.copyFile(ctx, p, dst, req)
		default:
			return fmt.Errorf("local source %q holds %q, which is not a file or a directory (symlinks are not copied)", rel, sub)
		}
	})
}

var (
	_ getter.Getter = (*localGetter)(nil)
	_ io.Writer     = (*tailBuffer)(nil)
)

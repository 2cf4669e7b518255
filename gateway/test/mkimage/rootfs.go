package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
)

// baseDirs exist in every image: runtimes mount /proc, /sys and /dev over
// them, and shells expect /tmp and a home for root.
var baseDirs = []struct {
	path string
	mode int64
}{
	{"bin", 0o755}, {"dev", 0o755}, {"etc", 0o755}, {"proc", 0o555},
	{"root", 0o700}, {"sys", 0o555}, {"tmp", 0o1777}, {"usr", 0o755},
	{"usr/bin", 0o755}, {"var", 0o755},
}

// passwd and group let `id`, and runtimes resolving a user name, find root
// and nobody, as in the busybox images on Docker Hub.
const (
	passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
	group  = "root:x:0:\nnobody:x:65534:\n"
)

// rootfsWriter writes a tar of a root filesystem, creating parent
// directories on demand and refusing to write one path twice.
type rootfsWriter struct {
	tw   *tar.Writer
	seen map[string]bool
}

func newRootfsWriter(buf *bytes.Buffer) *rootfsWriter {
	return &rootfsWriter{tw: tar.NewWriter(buf), seen: map[string]bool{}}
}

// has reports whether p (relative, cleaned) is already written.
func (w *rootfsWriter) has(p string) bool { return w.seen[p] }

func (w *rootfsWriter) header(h *tar.Header) error {
	h.Name = strings.TrimPrefix(path.Clean("/"+h.Name), "/")
	if h.Name == "" || w.seen[h.Name] {
		return nil
	}
	if err := w.parents(h.Name); err != nil {
		return err
	}
	w.seen[h.Name] = true
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	h.ModTime = epoch
	h.Format = tar.FormatPAX
	return w.tw.WriteHeader(h)
}

func (w *rootfsWriter) parents(p string) error {
	dir := path.Dir(p)
	if dir == "." || w.seen[dir] {
		return nil
	}
	return w.dir(dir, 0o755)
}

func (w *rootfsWriter) dir(p string, mode int64) error {
	return w.header(&tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: mode})
}

// file writes a regular file unless p is already written: the first
// writer of a path wins.
func (w *rootfsWriter) file(p string, mode int64, data []byte) error {
	if w.has(strings.TrimPrefix(path.Clean("/"+p), "/")) {
		return nil
	}
	if err := w.header(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := w.tw.Write(data)
	return err
}

func (w *rootfsWriter) symlink(p, target string) error {
	return w.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777})
}

func (w *rootfsWriter) close() error { return w.tw.Close() }

// buildRootfs returns the uncompressed tar of the image's only layer.
func buildRootfs(spec imageSpec) ([]byte, error) {
	var buf bytes.Buffer
	w := newRootfsWriter(&buf)
	for _, d := range baseDirs {
		if err := w.dir(d.path, d.mode); err != nil {
			return nil, err
		}
	}
	// Explicit files first, so an applet symlink or the default
	// /etc/passwd never hides one of them.
	for _, f := range spec.Files {
		info, err := os.Stat(f.Src)
		if err != nil {
			return nil, fmt.Errorf("-file %s: %w", f.Src, err)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("-file %s: not a regular file", f.Src)
		}
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, fmt.Errorf("-file %s: %w", f.Src, err)
		}
		mode := f.Mode
		if mode == 0 {
			mode = int64(info.Mode().Perm())
		}
		if err := w.file(f.Dst, mode, data); err != nil {
			return nil, err
		}
	}

	for _, d := range spec.Dirs {
		if err := w.dir(d, 0o755); err != nil {
			return nil, err
		}
	}
	for _, l := range spec.Symlinks {
		if err := w.symlink(l.Path, l.Target); err != nil {
			return nil, err
		}
	}
	// The defaults, unless -file gave the image its own.
	if err := w.file("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return nil, err
	}
	if err := w.file("etc/group", 0o644, []byte(group)); err != nil {
		return nil, err
	}
	if spec.Busybox != "" {
		if err := addBusybox(w, spec.Busybox); err != nil {
			return nil, err
		}
	}
	if err := w.close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// addBusybox installs the binary at /bin/busybox and a /bin symlink for every
// applet it was built with (`busybox --list`), as busybox --install -s would.
func addBusybox(w *rootfsWriter, bin string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("-busybox: %w", err)
	}
	applets, err := busyboxApplets(bin)
	if err != nil {
		return err
	}
	if err := w.file("bin/busybox", 0o755, data); err != nil {
		return err
	}
	for _, a := range applets {
		p := "bin/" + a
		if a == "busybox" || w.has(p) {
			continue
		}
		if err := w.symlink(p, "/bin/busybox"); err != nil {
			return err
		}
	}
	return nil
}

// busyboxApplets runs `busybox --list`. The binary must be static and for
// this machine, which is also what the image needs.
func busyboxApplets(bin string) ([]string, error) {
	out, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", bin, err)
	}
	var applets []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, "/") {
			continue
		}
		applets = append(applets, line)
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list printed no applets", bin)
	}
	return applets, nil
}

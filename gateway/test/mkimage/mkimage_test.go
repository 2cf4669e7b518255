package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		desc    string
		in      string
		want    []string
		wantErr bool
	}{
		{desc: "empty", in: "", want: nil},
		{desc: "json array", in: `["/bin/sh","-c","echo a, b"]`, want: []string{"/bin/sh", "-c", "echo a, b"}},
		{desc: "comma list", in: "sleep,3600", want: []string{"sleep", "3600"}},
		{desc: "single word", in: "/pause", want: []string{"/pause"}},
		{desc: "broken json", in: `["sh"`, wantErr: true},
		{desc: "json of numbers", in: `[1,2]`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseList(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseList(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("parseList(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseFileFlag(t *testing.T) {
	tests := []struct {
		desc    string
		in      string
		want    fileCopy
		wantErr bool
	}{
		{desc: "src and absolute dst", in: "bin/pause:/pause", want: fileCopy{Src: "bin/pause", Dst: "/pause"}},
		{desc: "dst cleaned", in: "a:/usr//bin/../bin/a", want: fileCopy{Src: "a", Dst: "/usr/bin/a"}},
		{desc: "relative dst", in: "a:pause", wantErr: true},
		{desc: "no dst", in: "a", wantErr: true},
		{desc: "empty src", in: ":/a", wantErr: true},
		{desc: "setuid mode", in: "nnp:/usr/local/bin/nnp:4755", want: fileCopy{Src: "nnp", Dst: "/usr/local/bin/nnp", Mode: 0o4755}},
		{desc: "mode not octal", in: "a:/a:rwx", wantErr: true},
		{desc: "mode out of range", in: "a:/a:17777", wantErr: true},
		{desc: "mode zero", in: "a:/a:0", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseFileFlag(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseFileFlag(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("parseFileFlag(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestNormalizeRef(t *testing.T) {
	tests := []struct {
		desc     string
		in       string
		wantFull string
		wantTag  string
		wantErr  bool
	}{
		{desc: "full name kept", in: "docker.io/library/busybox:1.36", wantFull: "docker.io/library/busybox:1.36", wantTag: "1.36"},
		{desc: "docker hub short name", in: "busybox", wantFull: "docker.io/library/busybox:latest", wantTag: "latest"},
		{desc: "docker hub user repo", in: "someone/tool:v1", wantFull: "docker.io/someone/tool:v1", wantTag: "v1"},
		{desc: "registry with port, no tag", in: "localhost:5000/busybox", wantFull: "localhost:5000/busybox:latest", wantTag: "latest"},
		{desc: "registry with port and tag", in: "127.0.0.1:5000/a/b:2", wantFull: "127.0.0.1:5000/a/b:2", wantTag: "2"},
		{desc: "k8s registry", in: "registry.k8s.io/pause:3.10", wantFull: "registry.k8s.io/pause:3.10", wantTag: "3.10"},
		{desc: "digest refused", in: "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000", wantErr: true},
		{desc: "upper case refused", in: "BusyBox:1", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			full, tag, err := normalizeRef(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("normalizeRef(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if full != tc.wantFull || tag != tc.wantTag {
				t.Fatalf("normalizeRef(%q) = %q, %q; want %q, %q", tc.in, full, tag, tc.wantFull, tc.wantTag)
			}
		})
	}
}

// fakeBusybox writes a script that answers --list like busybox does, so the
// test needs no busybox installed.
func fakeBusybox(t *testing.T, applets ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "busybox")
	script := "#!/bin/sh\n"
	for _, a := range applets {
		script += "echo " + a + "\n"
	}
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// readLayout reads the only layer of the first image in an OCI layout
// tarball, after checking the index names it as containerd expects.
func readLayout(t *testing.T, tarPath string, wantRefs map[string]string) (map[string]*tar.Header, map[string][]byte, []string, []string, []string) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", tarPath, err)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != len(wantRefs) {
		t.Fatalf("index has %d manifests, want %d", len(im.Manifests), len(wantRefs))
	}
	for _, d := range im.Manifests {
		name := d.Annotations[annotationImageName]
		wantTag, ok := wantRefs[name]
		if !ok {
			t.Errorf("index entry named %q, want one of %v", name, wantRefs)
		}
		if got := d.Annotations[annotationRefName]; got != wantTag {
			t.Errorf("%s: ref.name = %q, want %q", name, got, wantTag)
		}
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH {
			t.Errorf("%s: platform = %v, want linux/%s", name, d.Platform, runtime.GOARCH)
		}
	}

	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	headers, contents := map[string]*tar.Header{}, map[string][]byte{}
	lr := tar.NewReader(rc)
	for {
		h, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read layer: %v", err)
		}
		if _, dup := headers[h.Name]; dup {
			t.Errorf("layer has %s twice", h.Name)
		}
		headers[h.Name] = h
		contents[h.Name], _ = io.ReadAll(lr)
	}
	return headers, contents, cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.Env
}

func TestRunWritesImportableLayout(t *testing.T) {
	dir := t.TempDir()
	bb := fakeBusybox(t, "busybox", "sh", "echo", "sleep", "[[")
	pause := filepath.Join(dir, "pause")
	if err := os.WriteFile(pause, []byte("pause binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An explicit file must win over the applet symlink of the same name.
	sleep := filepath.Join(dir, "sleep")
	if err := os.WriteFile(sleep, []byte("my sleep"), 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	args := []string{
		"-ref", "docker.io/library/busybox:1.36", "-ref", "busybox",
		"-busybox", bb, "-file", pause + ":/pause", "-file", sleep + ":/bin/sleep",
		"-entrypoint", `["/pause"]`, "-cmd", "sh,-c,true", "-env", "A=b", "-o", out,
	}
	if err := run(args); err != nil {
		t.Fatalf("run: %v", err)
	}

	headers, contents, entrypoint, cmd, env := readLayout(t, out, map[string]string{
		"docker.io/library/busybox:1.36":   "1.36",
		"docker.io/library/busybox:latest": "latest",
	})
	if !slices.Equal(entrypoint, []string{"/pause"}) || !slices.Equal(cmd, []string{"sh", "-c", "true"}) {
		t.Errorf("entrypoint %q cmd %q", entrypoint, cmd)
	}
	if !slices.Equal(env, []string{defaultPath, "A=b"}) {
		t.Errorf("env = %q, want default PATH then A=b", env)
	}

	tests := []struct {
		desc     string
		name     string
		typ      byte
		mode     int64
		linkname string
		content  string
	}{
		{desc: "busybox installed", name: "bin/busybox", typ: tar.TypeReg, mode: 0o755},
		{desc: "applet symlink", name: "bin/sh", typ: tar.TypeSymlink, linkname: "/bin/busybox", mode: 0o777},
		{desc: "applet with odd name", name: "bin/[[", typ: tar.TypeSymlink, linkname: "/bin/busybox", mode: 0o777},
		{desc: "explicit file keeps its mode", name: "pause", typ: tar.TypeReg, mode: 0o755, content: "pause binary"},
		{desc: "explicit file wins over applet", name: "bin/sleep", typ: tar.TypeReg, mode: 0o700, content: "my sleep"},
		{desc: "tmp is sticky", name: "tmp/", typ: tar.TypeDir, mode: 0o1777},
		{desc: "passwd for id", name: "etc/passwd", typ: tar.TypeReg, mode: 0o644, content: passwd},
	}
	for _, tc := range tests {
		h, ok := headers[tc.name]
		if !ok {
			t.Errorf("%s: %s missing from the layer", tc.desc, tc.name)
			continue
		}
		if h.Typeflag != tc.typ || h.Mode != tc.mode || h.Linkname != tc.linkname {
			t.Errorf("%s: %s type %c mode %#o link %q; want type %c mode %#o link %q",
				tc.desc, tc.name, h.Typeflag, h.Mode, h.Linkname, tc.typ, tc.mode, tc.linkname)
		}
		if tc.content != "" && string(contents[tc.name]) != tc.content {
			t.Errorf("%s: %s content %q, want %q", tc.desc, tc.name, contents[tc.name], tc.content)
		}
	}
	if _, ok := headers["bin/busybox"]; ok && !bytes.HasPrefix(contents["bin/busybox"], []byte("#!/bin/sh")) {
		t.Errorf("bin/busybox is not the given binary")
	}

	// Reproducible: the same inputs give the same bytes, so importing again
	// changes nothing.
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(args); err != nil {
		t.Fatalf("second run: %v", err)
	}
	second, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("two builds of the same inputs differ")
	}
}

// The e2e images need a user, their own /etc/passwd, empty directories and
// symlinks (agnhost's /agnhost-2, /uploads, nonroot's USER 1234).
func TestUserDirsSymlinksAndOwnPasswd(t *testing.T) {
	dir := t.TempDir()
	ownPasswd := "root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home:/bin/sh\n"
	pw := filepath.Join(dir, "passwd")
	if err := os.WriteFile(pw, []byte(ownPasswd), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	if err := run([]string{
		"-ref", "registry.k8s.io/e2e-test-images/agnhost:2.63.0", "-file", pw + ":/etc/passwd",
		"-file", pw + ":/usr/local/bin/nnp:4755",
		"-dir", "/uploads", "-symlink", "/agnhost-2:agnhost", "-user", "1234:50000", "-o", out,
	}); err != nil {
		t.Fatalf("run: %v", err)
	}
	headers, contents, _, _, _ := readLayout(t, out, map[string]string{"registry.k8s.io/e2e-test-images/agnhost:2.63.0": "2.63.0"})
	if string(contents["etc/passwd"]) != ownPasswd {
		t.Errorf("/etc/passwd = %q, want the -file one", contents["etc/passwd"])
	}
	if string(contents["etc/group"]) != group {
		t.Errorf("/etc/group = %q, want the default", contents["etc/group"])
	}
	if h := headers["etc/passwd"]; h == nil || h.Mode != 0o644 {
		t.Errorf("/etc/passwd = %+v, want the source's mode 0644", h)
	}
	if h := headers["usr/local/bin/nnp"]; h == nil || h.Mode != 0o4755 || h.Uid != 0 {
		t.Errorf("/usr/local/bin/nnp = %+v, want mode 4755 (setuid) owned by root", h)
	}
	if h := headers["uploads/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o755 {
		t.Errorf("/uploads = %+v, want a 0755 directory", h)
	}
	if h := headers["agnhost-2"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "agnhost" {
		t.Errorf("/agnhost-2 = %+v, want a symlink to agnhost", h)
	}
	img, err := buildImage(imageSpec{User: "1234:50000"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "1234:50000" {
		t.Errorf("config User = %q, want 1234:50000", cfg.Config.User)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		desc string
		args []string
	}{
		{desc: "no output", args: []string{"-ref", "busybox"}},
		{desc: "output without a name", args: []string{"-o", filepath.Join(dir, "x.tar")}},
		{desc: "missing file", args: []string{"-ref", "a", "-file", filepath.Join(dir, "nope") + ":/nope", "-o", filepath.Join(dir, "x.tar")}},
		{desc: "directory as file", args: []string{"-ref", "a", "-file", dir + ":/d", "-o", filepath.Join(dir, "x.tar")}},
		{desc: "busybox that cannot list", args: []string{"-ref", "a", "-busybox", "/bin/false", "-o", filepath.Join(dir, "x.tar")}},
		{desc: "relative -dir", args: []string{"-ref", "a", "-dir", "uploads", "-o", filepath.Join(dir, "x.tar")}},
		{desc: "-symlink without target", args: []string{"-ref", "a", "-symlink", "/agnhost-2", "-o", filepath.Join(dir, "x.tar")}},
		{desc: "stray argument", args: []string{"-ref", "a", "-o", filepath.Join(dir, "x.tar"), "extra"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if err := run(tc.args); err == nil {
				t.Fatalf("run(%q) succeeded, want an error", tc.args)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tar")); err == nil {
		t.Errorf("a failed run left an output file")
	}
}

// TestBusyboxAppletsFromRealBusybox checks the applet list of the busybox
// the e2e images use, when it is installed.
func TestBusyboxAppletsFromRealBusybox(t *testing.T) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed (Debian busybox-static provides it)")
	}
	applets, err := busyboxApplets(bb)
	if err != nil {
		t.Fatalf("busyboxApplets: %v", err)
	}
	for _, want := range []string{"sh", "echo", "sleep", "cat", "ls", "true", "false", "env"} {
		if !slices.Contains(applets, want) {
			t.Errorf("applets of %s lack %q", bb, want)
		}
	}
}

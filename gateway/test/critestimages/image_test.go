package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

var testInputs = inputs{
	busybox: []byte("not really busybox"),
	applets: []string{"sh", "id", "sleep"},
	standin: []byte("not really standin"),
}

func builtByRef(t *testing.T) map[string]image {
	t.Helper()
	specs, err := buildCatalogue(testInputs)
	if err != nil {
		t.Fatalf("buildCatalogue: %v", err)
	}
	out := map[string]image{}
	for _, s := range specs {
		for _, r := range s.refs {
			if _, dup := out[r]; dup {
				t.Fatalf("reference %s built twice", r)
			}
			out[r] = s.built
		}
	}
	return out
}

type imageConfig struct {
	Config struct {
		User       string
		Env        []string
		Entrypoint []string
		Cmd        []string
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func decodeConfig(t *testing.T, img image) imageConfig {
	t.Helper()
	var c imageConfig
	if err := json.Unmarshal(img.config.data, &c); err != nil {
		t.Fatalf("config: %v", err)
	}
	return c
}

// tarMembers unpacks a layer into name -> header and checks its diff ID.
func tarMembers(t *testing.T, l layer) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(l.data))
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	sum := sha256.Sum256(raw)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != l.diffID {
		t.Fatalf("diff ID %s, want %s", l.diffID, got)
	}
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		b, _ := io.ReadAll(tr)
		hdrs[h.Name], data[h.Name] = h, b
	}
	return hdrs, data
}

func TestCatalogueImages(t *testing.T) {
	images := builtByRef(t)
	for _, tc := range []struct {
		desc       string
		ref        string
		user       string
		entrypoint string
		file       string // a file the top layer must hold
		mode       int64
		contains   string // and a string that file must contain
	}{
		{desc: "default busybox has pgrep and ipcs", ref: e2eImages + "busybox:1.29-2", file: "bin/ipcs", mode: 0o755, contains: "standin"},
		{desc: "uid user", ref: criToolsReg + "test-image-user-uid:latest", user: "1002"},
		{desc: "named user", ref: criToolsReg + "test-image-user-username:latest", user: "www-data"},
		{desc: "uid:gid user", ref: criToolsReg + "test-image-user-uid-group:latest", user: "1003:1004"},
		{desc: "name:gid user", ref: criToolsReg + "test-image-user-username-group:latest", user: "www-data:1004"},
		{desc: "predefined group lists default-user in 50000", ref: criToolsReg + "test-image-predefined-group:latest",
			user: "1000", file: "etc/group", mode: 0o644, contains: "group-defined-in-image:x:50000:default-user\n"},
		{desc: "nonewprivs binary is setuid root", ref: e2eImages + "nonewprivs:1.3",
			entrypoint: "/usr/local/bin/nnp", file: "usr/local/bin/nnp", mode: 0o4755, contains: "standin"},
		{desc: "nginx runs as a file named nginx", ref: e2eImages + "nginx:1.14-2",
			entrypoint: "/usr/sbin/nginx", file: "usr/sbin/nginx", mode: 0o755},
		{desc: "pause", ref: "registry.k8s.io/pause:3.10", entrypoint: "/pause", file: "pause", mode: 0o755},
		{desc: "marker file", ref: criToolsReg + "test-image-2:latest", file: "test-image-2", mode: 0o644},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			img, ok := images[tc.ref]
			if !ok {
				t.Fatalf("%s not in the catalogue", tc.ref)
			}
			c := decodeConfig(t, img)
			if c.Config.User != tc.user {
				t.Errorf("User = %q, want %q", c.Config.User, tc.user)
			}
			var ep string
			if len(c.Config.Entrypoint) > 0 {
				ep = c.Config.Entrypoint[0]
			}
			if ep != tc.entrypoint {
				t.Errorf("Entrypoint = %q, want %q", ep, tc.entrypoint)
			}
			if len(c.RootFS.DiffIDs) != len(img.layers) {
				t.Fatalf("%d diff IDs for %d layers", len(c.RootFS.DiffIDs), len(img.layers))
			}
			for i, l := range img.layers {
				if c.RootFS.DiffIDs[i] != l.diffID {
					t.Errorf("diff ID %d = %s, layer has %s", i, c.RootFS.DiffIDs[i], l.diffID)
				}
			}
			if tc.file == "" {
				return
			}
			hdrs, data := tarMembers(t, img.layers[len(img.layers)-1])
			h, ok := hdrs[tc.file]
			if !ok {
				t.Fatalf("top layer has no %s", tc.file)
			}
			if h.Mode != tc.mode || h.Uid != 0 {
				t.Errorf("%s mode %o uid %d, want %o uid 0", tc.file, h.Mode, h.Uid, tc.mode)
			}
			if !bytes.Contains(data[tc.file], []byte(tc.contains)) {
				t.Errorf("%s = %q, want it to contain %q", tc.file, data[tc.file], tc.contains)
			}
		})
	}
}

func TestBusyboxLayerHasAppletsAndAccounts(t *testing.T) {
	images := builtByRef(t)
	hdrs, data := tarMembers(t, images[e2eImages+"busybox:1.29-2"].layers[0])
	for _, a := range testInputs.applets {
		h, ok := hdrs["bin/"+a]
		if !ok || h.Typeflag != tar.TypeLink || h.Linkname != "bin/busybox" {
			t.Errorf("bin/%s is not a hard link to busybox: %+v", a, h)
		}
	}
	if h := hdrs["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("tmp/ = %+v, want mode 1777", h)
	}
	// critest's RunAsUserName spec runs as nobody; the username images as www-data.
	for _, u := range []string{"nobody:x:65534", "www-data:x:33"} {
		if !bytes.Contains(data["etc/passwd"], []byte(u)) {
			t.Errorf("etc/passwd lacks %q", u)
		}
	}
}

func TestDigestsMatchCritestExpectations(t *testing.T) {
	images := builtByRef(t)
	same := []string{criToolsReg + "test-image-tags:1", criToolsReg + "test-image-tags:2", criToolsReg + "test-image-tags:3"}
	for _, r := range same[1:] {
		if images[r].manifest.digest != images[same[0]].manifest.digest {
			t.Errorf("%s and %s must be the same image", r, same[0])
		}
	}
	// Every other image must differ, or critest's "different images" and
	// remove-by-ID specs would see one image under several names.
	seen := map[string]string{}
	for ref, img := range images {
		if other, ok := seen[img.manifest.digest]; ok && !(contains(same, ref) && contains(same, other)) {
			t.Errorf("%s and %s have the same digest", ref, other)
		}
		seen[img.manifest.digest] = ref
	}
	again := builtByRef(t)
	for ref, img := range images {
		if again[ref].manifest.digest != img.manifest.digest {
			t.Errorf("%s is not reproducible", ref)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSplitRef(t *testing.T) {
	for _, tc := range []struct {
		desc, ref, repo, tag string
		wantErr              bool
	}{
		{desc: "tagged", ref: "registry.k8s.io/e2e-test-images/busybox:1.29-2", repo: "e2e-test-images/busybox", tag: "1.29-2"},
		{desc: "no tag means latest", ref: "gcr.io/k8s-staging-cri-tools/test-image-latest", repo: "k8s-staging-cri-tools/test-image-latest", tag: "latest"},
		{desc: "registry with port", ref: "localhost.localdomain:5000/a/b", repo: "a/b", tag: "latest"},
		{desc: "digest cannot be rebuilt", ref: "gcr.io/x/y@sha256:abc", wantErr: true},
		{desc: "no registry host", ref: "busybox:1.0", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			repo, tag, err := splitRef(tc.ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if repo != tc.repo || tag != tc.tag {
				t.Errorf("got %q %q, want %q %q", repo, tag, tc.repo, tc.tag)
			}
		})
	}
}

package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Index annotations containerd reads when importing an OCI layout.
const (
	// annotationImageName holds the full image name; containerd's importer
	// (images/archive, imageName) prefers it over the OCI ref name.
	annotationImageName = "io.containerd.image.name"
	// annotationRefName holds the tag only, as containerd's exporter writes
	// it (images/archive, ociReferenceName), so other OCI tools find it too.
	annotationRefName = "org.opencontainers.image.ref.name"
)

// normalizeRef expands a familiar name the way containerd's
// reference/docker.ParseNormalizedNamed followed by TagNameOnly does:
// "busybox" -> "docker.io/library/busybox:latest". It returns the full name
// and its tag.
func normalizeRef(ref string) (full, tag string, err error) {
	if strings.Contains(ref, "@") {
		return "", "", fmt.Errorf("-ref %q: digests cannot name an image in a layout; give a tag", ref)
	}
	repo, tag := ref, "latest"
	// A colon after the last slash separates the tag; one before it belongs
	// to a registry port.
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	domain, rest, found := strings.Cut(repo, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", repo
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	full = domain + "/" + rest + ":" + tag
	if _, err := name.NewTag(full, name.StrictValidation); err != nil {
		return "", "", fmt.Errorf("-ref %q: %w", ref, err)
	}
	return full, tag, nil
}

// writeLayoutTar writes img as an OCI image layout tarball at out, with one
// index entry per name in refs. The file is replaced atomically.
func writeLayoutTar(out string, img v1.Image, refs []string) error {
	dir, err := os.MkdirTemp("", "mkimage-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("create layout: %w", err)
	}
	for _, ref := range refs {
		full, tag, err := normalizeRef(ref)
		if err != nil {
			return err
		}
		err = lp.AppendImage(img,
			layout.WithAnnotations(map[string]string{annotationImageName: full, annotationRefName: tag}),
			layout.WithPlatform(platform()))
		if err != nil {
			return fmt.Errorf("write %s to layout: %w", full, err)
		}
	}

	tmp := out + ".tmp"
	if err := tarDir(tmp, dir); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}

// tarDir writes the tree under dir to the tar file out, in lexical order with
// fixed times and owners so equal trees give equal files.
func tarDir(out, dir string) (retErr error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if err := f.Close(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Modes are fixed too: layout.Write leaves blobs 0600, which would
		// make the file differ from one umask to another for no reason.
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("tar layout: %w", err)
	}
	return tw.Close()
}

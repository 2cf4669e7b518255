package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"time"
)

// Docker schema 2 media types: containerd 1.6 and every registry version take
// them, and the upstream test images use them too.
const (
	mediaManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaConfig   = "application/vnd.docker.container.image.v1+json"
	mediaLayer    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)

// epoch is every file's and image's timestamp, so a build is reproducible and
// pushing twice changes nothing.
var epoch = time.Unix(0, 0).UTC()

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// blob is content addressed by its sha256 digest.
type blob struct {
	mediaType string
	digest    string
	data      []byte
}

func newBlob(mediaType string, data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{mediaType: mediaType, digest: "sha256:" + hex.EncodeToString(sum[:]), data: data}
}

// layer is a gzipped tar with the digest of its uncompressed form (the diff ID
// the image config lists).
type layer struct {
	blob
	diffID string
}

// image is what a registry stores for one reference.
type image struct {
	manifest blob
	config   blob
	layers   []layer
}

// builtSpec pairs a spec's references with the image built for them.
type builtSpec struct {
	refs  []string
	built image
}

// inputs are the host files every image is made from.
type inputs struct {
	busybox []byte
	applets []string
	standin []byte
}

// buildCatalogue builds every image of catalogue() over one shared busybox layer.
func buildCatalogue(in inputs) ([]builtSpec, error) {
	base, err := busyboxLayer(in)
	if err != nil {
		return nil, err
	}
	var out []builtSpec
	for _, s := range catalogue() {
		img, err := buildImage(base, s, in)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", s.refs[0], err)
		}
		out = append(out, builtSpec{refs: s.refs, built: img})
	}
	return out, nil
}

// entry is one tar member.
type entry struct {
	name     string
	typeflag byte
	mode     int64
	data     []byte
	linkname string
}

func busyboxLayer(in inputs) (layer, error) {
	if len(in.busybox) == 0 {
		return layer{}, fmt.Errorf("empty busybox binary")
	}
	var es []entry
	for _, d := range []struct {
		name string
		mode int64
	}{
		{"bin", 0o755}, {"dev", 0o755}, {"etc", 0o755}, {"home", 0o755}, {"proc", 0o555},
		{"root", 0o700}, {"sys", 0o555}, {"tmp", 0o1777}, {"usr", 0o755}, {"usr/bin", 0o755},
		{"usr/sbin", 0o755}, {"usr/local", 0o755}, {"usr/local/bin", 0o755}, {"var", 0o755},
		{"var/run", 0o755}, {"var/www", 0o755},
	} {
		es = append(es, entry{name: d.name, typeflag: tar.TypeDir, mode: d.mode})
	}
	es = append(es,
		entry{name: "bin/busybox", typeflag: tar.TypeReg, mode: 0o755, data: in.busybox},
		entry{name: "etc/passwd", typeflag: tar.TypeReg, mode: 0o644, data: []byte(basePasswd)},
		entry{name: "etc/group", typeflag: tar.TypeReg, mode: 0o644, data: []byte(baseGroup)},
	)
	applets := append([]string(nil), in.applets...)
	sort.Strings(applets)
	for _, a := range applets {
		// Hard links, as in the upstream image: runc masks a path by mounting
		// over it after resolving symlinks, so masking a symlinked /bin/ls
		// (critest's MaskedPaths spec) would mask busybox itself.
		es = append(es, entry{name: "bin/" + a, typeflag: tar.TypeLink, mode: 0o755, linkname: "bin/busybox"})
	}
	return tarLayer(es)
}

func buildImage(base layer, s spec, in inputs) (image, error) {
	layers := []layer{base}
	if len(s.files) > 0 {
		var es []entry
		dirs := map[string]bool{}
		for _, f := range s.files {
			// Parent directories first, so the layer unpacks on its own.
			for d := path.Dir(f.path); d != "." && !dirs[d]; d = path.Dir(d) {
				dirs[d] = true
			}
			data := f.data
			if f.standin {
				if len(in.standin) == 0 {
					return image{}, fmt.Errorf("%s needs the standin binary", f.path)
				}
				data = in.standin
			}
			es = append(es, entry{name: f.path, typeflag: tar.TypeReg, mode: f.mode, data: data})
		}
		var ds []entry
		for d := range dirs {
			ds = append(ds, entry{name: d, typeflag: tar.TypeDir, mode: 0o755})
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i].name < ds[j].name })
		l, err := tarLayer(append(ds, es...))
		if err != nil {
			return image{}, err
		}
		layers = append(layers, l)
	}

	diffIDs := make([]string, 0, len(layers))
	for _, l := range layers {
		diffIDs = append(diffIDs, l.diffID)
	}
	env := append([]string{defaultPath}, s.env...)
	cfg := map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"User":       s.user,
			"Env":        env,
			"Entrypoint": s.entrypoint,
			"Cmd":        s.cmd,
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return image{}, err
	}
	config := newBlob(mediaConfig, cfgJSON)

	type descriptor struct {
		MediaType string `json:"mediaType"`
		Size      int    `json:"size"`
		Digest    string `json:"digest"`
	}
	m := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{SchemaVersion: 2, MediaType: mediaManifest,
		Config: descriptor{MediaType: config.mediaType, Size: len(config.data), Digest: config.digest}}
	for _, l := range layers {
		m.Layers = append(m.Layers, descriptor{MediaType: l.mediaType, Size: len(l.data), Digest: l.digest})
	}
	mJSON, err := json.Marshal(m)
	if err != nil {
		return image{}, err
	}
	return image{manifest: newBlob(mediaManifest, mJSON), config: config, layers: layers}, nil
}

// tarLayer writes entries as a reproducible gzipped tar owned by root.
func tarLayer(es []entry) (layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range es {
		name := e.name
		if e.typeflag == tar.TypeDir {
			name += "/"
		}
		hdr := &tar.Header{
			Name: name, Typeflag: e.typeflag, Mode: e.mode, Linkname: e.linkname,
			Size: int64(len(e.data)), ModTime: epoch, Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return layer{}, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return layer{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return layer{}, err
	}
	diff := sha256.Sum256(raw.Bytes())

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz) // no name or mtime in the header: reproducible
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return layer{}, err
	}
	if err := zw.Close(); err != nil {
		return layer{}, err
	}
	return layer{blob: newBlob(mediaLayer, gz.Bytes()), diffID: "sha256:" + hex.EncodeToString(diff[:])}, nil
}

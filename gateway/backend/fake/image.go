package fake

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeFsMountpoint is the image filesystem ImageFsInfo reports.
const fakeFsMountpoint = "/var/lib/splitlet-fake/io.containerd.snapshotter.v1.overlayfs"

var (
	repoPathRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagRE      = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE   = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	hexIDRE    = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// NormalizeImageRef normalises an image reference the way containerd does
// (docker's reference.ParseNormalizedNamed plus a default tag): `busybox`
// becomes `docker.io/library/busybox:latest`, `foo/bar:1` becomes
// `docker.io/foo/bar:1`, and references with a registry host or a digest
// keep them. Invalid references are InvalidArgument.
func NormalizeImageRef(s string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("invalid image reference %q: %s: %w", s, why, errdefs.ErrInvalidArgument)
	}
	if s == "" {
		return bad("empty")
	}
	name, digest, hasDigest := strings.Cut(s, "@")
	if hasDigest && !digestRE.MatchString(digest) {
		return bad("digest must be sha256: and 64 lowercase hex digits")
	}
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
		if !tagRE.MatchString(tag) {
			return bad("invalid tag")
		}
	}
	domain, path := "docker.io", name
	if first, rest, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		domain, path = first, rest
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if strings.ToLower(path) != path {
		return bad("repository name must be lowercase")
	}
	if !repoPathRE.MatchString(path) {
		return bad("invalid repository name")
	}
	ref := domain + "/" + path
	if tag == "" && !hasDigest {
		tag = "latest"
	}
	if tag != "" {
		ref += ":" + tag
	}
	if hasDigest {
		ref += "@" + digest
	}
	return ref, nil
}

// repoOf strips the tag and digest from a normalised reference.
func repoOf(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return name
}

// newImage invents a deterministic image for a normalised reference.
func newImage(ref string) *image {
	sum := sha256.Sum256([]byte("splitlet-fake image " + ref))
	img := &image{
		id:   "sha256:" + hex.EncodeToString(sum[:]),
		spec: ref,
		// 2 to 66 MiB, stable per reference.
		size: 2<<20 + binary.BigEndian.Uint64(sum[:8])%(64<<20),
	}
	if nameTag, digest, ok := strings.Cut(ref, "@"); ok {
		img.repoDigests = []string{repoOf(ref) + "@" + digest}
		if nameTag != repoOf(ref) {
			img.repoTags = []string{nameTag}
		}
	} else {
		m := sha256.Sum256([]byte("splitlet-fake manifest " + ref))
		img.repoTags = []string{ref}
		img.repoDigests = []string{repoOf(ref) + "@sha256:" + hex.EncodeToString(m[:])}
	}
	return img
}

// ref is what containerd reports as a container's image_ref: the first repo
// digest when there is one, else the image ID.
func (i *image) ref() string {
	if len(i.repoDigests) > 0 {
		return i.repoDigests[0]
	}
	return i.id
}

// name is what a container's status reports as its image.
func (i *image) name() string {
	if len(i.repoTags) > 0 {
		return i.repoTags[0]
	}
	return i.spec
}

func (i *image) toCRI() *runtimeapi.Image {
	return &runtimeapi.Image{
		Id:          i.id,
		RepoTags:    append([]string(nil), i.repoTags...),
		RepoDigests: append([]string(nil), i.repoDigests...),
		Size:        i.size,
		Spec:        &runtimeapi.ImageSpec{Image: i.spec},
	}
}

// resolveImage finds an image by reference or by ID ("sha256:<hex>" or the
// bare hex), as containerd's LocalResolve accepts both.
func (s *store) resolveImage(ref string) (*image, error) {
	// A ref already in normal form, as the kubelet passes back the refs
	// ImageStatus and PullImage returned, needs no parsing: the keys of
	// imageRefs are normal forms, and normalizing one gives it back.
	if id, ok := s.imageRefs[ref]; ok {
		if img, ok := s.images[id]; ok {
			return img, nil
		}
	}
	id := ""
	switch {
	case strings.HasPrefix(ref, "sha256:"):
		id = ref
	case hexIDRE.MatchString(ref):
		id = "sha256:" + ref
	default:
		norm, err := NormalizeImageRef(ref)
		if err != nil {
			return nil, err
		}
		id = s.imageRefs[norm]
	}
	if img, ok := s.images[id]; ok {
		return img, nil
	}
	return nil, fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
}

// addImageLocked records an image pulled by ref and returns it.
func (s *store) addImageLocked(ref string) *image {
	if id, ok := s.imageRefs[ref]; ok {
		return s.images[id]
	}
	img := newImage(ref)
	s.images[img.id] = img
	s.imageRefs[ref] = img.id
	return img
}

// Preload adds images as if they had been pulled.
func (r *Runtime) Preload(refs ...string) error {
	norms := make([]string, 0, len(refs))
	for _, ref := range refs {
		norm, err := NormalizeImageRef(strings.TrimSpace(ref))
		if err != nil {
			return err
		}
		norms = append(norms, norm)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range norms {
		r.st.addImageLocked(n)
	}
	return nil
}

// PullImage "pulls" an image: it appears at once and the response carries
// its ID, as containerd's PullImage returns. A reference matching one of the
// control service's pull_failures fails with NotFound and the message a
// registry without the image produces in containerd.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	if err := r.inject(ctx, "PullImage"); err != nil {
		return nil, err
	}
	ref, err := NormalizeImageRef(req.GetImage().GetImage())
	if err != nil {
		return nil, err
	}
	if r.pullFails(ref) || r.pullFails(req.GetImage().GetImage()) {
		return nil, fmt.Errorf("failed to pull and unpack image %q: failed to resolve reference %q: %s: %w", ref, ref, ref, errdefs.ErrNotFound)
	}
	r.mu.Lock()
	img := r.st.addImageLocked(ref)
	r.mu.Unlock()
	r.log(ctx).Debug("image pulled", zap.String("ref", ref), zap.String("id", img.id))
	return &runtimeapi.PullImageResponse{ImageRef: img.id}, nil
}

// ImageStatus returns the image, or a nil image (not an error) when it is
// absent, as the CRI requires.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.inject(ctx, "ImageStatus"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	img, err := r.st.resolveImage(req.GetImage().GetImage())
	if errdefs.IsNotFound(err) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: img.toCRI()}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": fmt.Sprintf(`{"imageSpec":{"config":{}},"chainID":%q}`, img.id)}
	}
	return resp, nil
}

// ListImages lists images; a filter with an image lists only that one.
// (containerd ignores the filter; honouring it costs nothing.)
func (r *Runtime) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	if err := r.inject(ctx, "ListImages"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListImagesResponse{Images: r.listImagesLocked(req.GetFilter())}, nil
}

func (r *Runtime) listImagesLocked(f *runtimeapi.ImageFilter) []*runtimeapi.Image {
	out := []*runtimeapi.Image{}
	if want := f.GetImage().GetImage(); want != "" {
		if img, err := r.st.resolveImage(want); err == nil {
			out = append(out, img.toCRI())
		}
		return out
	}
	for _, img := range r.st.images {
		out = append(out, img.toCRI())
	}
	return out
}

// StreamImages is ListImages in chunks of up to 500 items.
func (r *Runtime) StreamImages(req *runtimeapi.StreamImagesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	if err := r.inject(stream.Context(), "StreamImages"); err != nil {
		return err
	}
	r.mu.RLock()
	items := r.listImagesLocked(req.GetFilter())
	r.mu.RUnlock()
	return sendChunks(items, func(chunk []*runtimeapi.Image) error {
		return stream.Send(&runtimeapi.StreamImagesResponse{Images: chunk})
	})
}

// RemoveImage removes an image (by reference or ID) with all its tags.
// Absent images succeed, as containerd's RemoveImage.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	if err := r.inject(ctx, "RemoveImage"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	img, err := r.st.resolveImage(req.GetImage().GetImage())
	if errdefs.IsNotFound(err) {
		return &runtimeapi.RemoveImageResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	delete(r.st.images, img.id)
	for ref, id := range r.st.imageRefs {
		if id == img.id {
			delete(r.st.imageRefs, ref)
		}
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the image filesystem: the images' total size and a
// plausible inode count.
func (r *Runtime) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := r.inject(ctx, "ImageFsInfo"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var used uint64
	for _, img := range r.st.images {
		used += img.size
	}
	// Each container's writable layer lives on the same filesystem.
	used += uint64(len(r.st.containers)) * writableLayerBytes
	inodes := uint64(len(r.st.images))*500 + uint64(len(r.st.containers))*writableLayerInodes
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems: []*runtimeapi.FilesystemUsage{{
			Timestamp:  r.now(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: fakeFsMountpoint},
			UsedBytes:  &runtimeapi.UInt64Value{Value: used},
			InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
		}},
	}, nil
}

package backoff

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// Image pull reasons. Their texts are the waiting reasons the pod status
// shows, as the kubelet's images.ErrImagePull and images.ErrImagePullBackOff.
var (
	// ErrImagePull: the last pull failed; the message is the runtime's error.
	ErrImagePull = errors.New("ErrImagePull")
	// ErrImagePullBackOff: a pull failed recently and the next attempt waits.
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
)

// ImagePullKey names a pod's image in the image-pull table:
// "<pod uid>_<image>", as the kubelet's image manager keys its back-off, so
// two pods pulling the same image back off independently.
func ImagePullKey(podUID types.UID, image string) string {
	return fmt.Sprintf("%s_%s", podUID, image)
}

// CheckImagePull is asked before pulling image for a pod. While the last
// failed pull is younger than the key's delay it returns the message
// `Back-off pulling image "<image>"` and ErrImagePullBackOff, and the pull
// must not be attempted; otherwise it returns "" and nil. Matches the
// IsInBackOffSinceUpdate check of the kubelet's imageManager.EnsureImageExists.
func (b *Backoff) CheckImagePull(podUID types.UID, image string) (string, error) {
	if b.IsInBackOffSinceUpdate(ImagePullKey(podUID, image), b.clock.Now()) {
		return fmt.Sprintf("Back-off pulling image %q", image), ErrImagePullBackOff
	}
	return "", nil
}

// ImagePullFailed records a failed pull of image for a pod, advancing its
// back-off, and returns the waiting message (the pull error's text) and
// ErrImagePull, as the kubelet's EnsureImageExists does after a failed pull.
func (b *Backoff) ImagePullFailed(podUID types.UID, image string, pullErr error) (string, error) {
	b.Next(ImagePullKey(podUID, image), b.clock.Now())
	msg := ""
	if pullErr != nil {
		msg = pullErr.Error()
	}
	return msg, ErrImagePull
}

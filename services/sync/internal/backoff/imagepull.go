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
// `Back-off pulling image "<image>": ErrImagePull: <that pull's error>` and
// ErrImagePullBackOff, and the pull must not be attempted; otherwise it
// forgets that error and returns "" and nil. Matches the
// IsInBackOffSinceUpdate check of the kubelet's imageManager.EnsureImageExists
// and its prevPullErrMsg, which puts the pull's error in the waiting message.
func (b *Backoff) CheckImagePull(podUID types.UID, image string) (string, error) {
	key := ImagePullKey(podUID, image)
	if b.IsInBackOffSinceUpdate(key, b.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		if last := b.lastErr(key); last != "" {
			msg += ": " + last
		}
		return msg, ErrImagePullBackOff
	}
	b.setLastErr(key, "")
	return "", nil
}

// ImagePullFailed records a failed pull of image for a pod, advancing its
// back-off, and returns the waiting message (the pull error's text) and
// ErrImagePull, as the kubelet's EnsureImageExists does after a failed pull.
func (b *Backoff) ImagePullFailed(podUID types.UID, image string, pullErr error) (string, error) {
	key := ImagePullKey(podUID, image)
	b.Next(key, b.clock.Now())
	msg := ""
	if pullErr != nil {
		msg = pullErr.Error()
	}
	b.setLastErr(key, fmt.Sprintf("%s: %s", ErrImagePull, msg))
	return msg, ErrImagePull
}

func (b *Backoff) lastErr(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.lastErr
	}
	return ""
}

func (b *Backoff) setLastErr(key, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		e.lastErr = msg
	}
}

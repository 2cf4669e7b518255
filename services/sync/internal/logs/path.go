package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	"k8s.io/apimachinery/pkg/types"
)

// PodLogDir is the kubelet's BuildPodLogsDirectory:
// <root>/<namespace>_<name>_<uid>, the directory given to the runtime as the
// sandbox's log_directory.
func PodLogDir(root, namespace, name string, uid types.UID) string {
	return filepath.Join(root, namespace+"_"+name+"_"+string(uid))
}

// LogPath is the log file of one container instance,
// <podLogDir>/<container>/<restartCount>.log, as the kubelet's
// BuildContainerLogsDirectory and buildContainerLogsPath lay it out (the
// container config's log_path is the part after podLogDir).
func LogPath(podLogDir, container string, restartCount int) string {
	return filepath.Join(podLogDir, container, strconv.Itoa(restartCount)+".log")
}

// PreviousInstance returns the log file of the container's last terminated
// instance, `kubectl logs --previous`: the one before the current
// restartCount. It fails with an error wrapping errdefs.ErrNotFound when the
// container never restarted or that file is gone (container GC removed it),
// with the kubelet's message.
func PreviousInstance(podLogDir, container string, restartCount int) (string, error) {
	notFound := fmt.Errorf("previous terminated container %q not found: %w", container, errdefs.ErrNotFound)
	if restartCount <= 0 {
		return "", notFound
	}
	p := LogPath(podLogDir, container, restartCount-1)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", notFound
		}
		return "", fmt.Errorf("stat previous log %q: %w", p, err)
	}
	return p, nil
}

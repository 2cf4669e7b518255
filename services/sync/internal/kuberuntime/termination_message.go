package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/logs"
)

// Bounds on a container's termination message, the kubelet's
// kubecontainer.MaxContainerTerminationMessage* constants: the file is read
// up to its last 4 KiB; a message taken from the log is the last 2 KiB of
// its last 80 lines. The status manager later bounds all of a pod's
// messages together (status.maxPodTerminationMessageLogLength).
const (
	maxContainerTerminationMessageLength    = 1024 * 4
	maxContainerTerminationMessageLogLength = 1024 * 2
	maxContainerTerminationMessageLogLines  = 80
)

// reasonContainerCannotRun is the runtime's reason for a container that
// never started; such a container has no log to fall back to.
const reasonContainerCannotRun = "ContainerCannotRun"

// convertToKubeContainerStatus is toContainerStatus plus, for an exited
// container, its termination message: what it wrote to the file mounted at
// terminationMessagePath, or with FallbackToLogsOnError and a failure
// (exit code not 0) and an empty file, the tail of its log. The message is
// appended to the runtime's own message, if any, after ": ". The file is
// read on every status, as the kubelet reads it. Matches the kubelet's
// kubeGenericRuntimeManager.convertToKubeContainerStatus.
func convertToKubeContainerStatus(ctx context.Context, runtimeName string, s *runtimeapi.ContainerStatus) *container.Status {
	st := toContainerStatus(ctx, runtimeName, s)
	if s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return st
	}
	info := getContainerInfoFromAnnotations(ctx, s.GetAnnotations())
	fallbackToLogs := info.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError &&
		st.ExitCode != 0 && st.Reason != reasonContainerCannotRun
	msg, checkLogs := getTerminationMessage(s, info.TerminationMessagePath, fallbackToLogs)
	if checkLogs {
		msg = readLastStringFromContainerLogs(ctx, s.GetLogPath())
	}
	if msg != "" {
		if st.Message != "" {
			st.Message += ": "
		}
		st.Message += msg
	}
	return st
}

// getTerminationMessage reads the last maxContainerTerminationMessageLength
// bytes of the host file mounted at terminationMessagePath. It reports
// whether the caller should read the log instead: when fallbackToLogs and
// the file is missing, not mounted or empty. A read error other than a
// missing file becomes the message. Matches the kubelet's
// getTerminationMessage.
func getTerminationMessage(s *runtimeapi.ContainerStatus, terminationMessagePath string, fallbackToLogs bool) (string, bool) {
	if terminationMessagePath == "" {
		return "", fallbackToLogs
	}
	for _, m := range s.GetMounts() {
		if m.GetContainerPath() != terminationMessagePath {
			continue
		}
		data, err := readAtMost(m.GetHostPath(), maxContainerTerminationMessageLength)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fallbackToLogs
			}
			return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err), false
		}
		return string(data), fallbackToLogs && len(data) == 0
	}
	return "", fallbackToLogs
}

// readAtMost returns the last limit bytes of the file at path (all of it
// when shorter). Matches the kubelet's tail.ReadAtMost.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := fi.Size() - limit; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// readLastStringFromContainerLogs returns the last
// maxContainerTerminationMessageLogLength bytes of the last
// maxContainerTerminationMessageLogLines lines of the container's CRI log,
// both streams; a read error becomes the message. Matches the kubelet's
// kubeGenericRuntimeManager.readLastStringFromContainerLogs.
func readLastStringFromContainerLogs(ctx context.Context, path string) string {
	lines := int64(maxContainerTerminationMessageLogLines)
	buf := &lastBytes{size: maxContainerTerminationMessageLogLength}
	if err := logs.ReadLogs(ctx, path, logs.Options{TailLines: &lines}, buf, buf); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(buf.b)
}

// lastBytes is an io.Writer that keeps only the last size bytes written,
// as the kubelet's circbuf.Buffer does for readLastStringFromContainerLogs.
type lastBytes struct {
	size int
	b    []byte
}

var _ io.Writer = (*lastBytes)(nil)

func (w *lastBytes) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= w.size {
		w.b = append(w.b[:0], p[len(p)-w.size:]...)
		return n, nil
	}
	if drop := len(w.b) + len(p) - w.size; drop > 0 {
		w.b = append(w.b[:0], w.b[drop:]...)
	}
	w.b = append(w.b, p...)
	return n, nil
}

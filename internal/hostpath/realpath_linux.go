package hostpath

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// realPath is filepath.EvalSymlinks for an existing absolute, clean path,
// in three syscalls whatever its depth: the kernel follows the links when
// it opens the path (O_PATH needs no permission on the file itself, only
// the search permission lstat needs on the directories), and
// /proc/self/fd names what it opened. EvalSymlinks lstats every element;
// the gateway resolves each hostPath of every container it creates, so
// that was most of its policy check's cost. Anything this cannot answer
// (no /proc, a relative path, an open that fails) is EvalSymlinks's,
// errors included.
func realPath(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return filepath.EvalSymlinks(path)
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return filepath.EvalSymlinks(path)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	_ = unix.Close(fd)
	if err != nil || !filepath.IsAbs(real) {
		return filepath.EvalSymlinks(path)
	}
	return real, nil
}

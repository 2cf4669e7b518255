package volume

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

const (
	maxFileNameLength = 255
	maxPathLength     = 4096

	// dataDirName is the symlink to the current timestamped directory, and
	// newDataDirName the one renamed over it: the kubelet's names.
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// FileProjection is one file of a volume: its content and mode. Matches the
// kubelet's volumeutil.FileProjection (without FsUser: sync sets no file
// owners).
type FileProjection struct {
	Data []byte
	Mode int32
}

// AtomicWriter writes a set of files into one target directory atomically.
// Matches the kubelet's volumeutil.AtomicWriter. It is not safe for
// concurrent use on one directory; sync writes a pod's volumes from that
// pod's worker only.
type AtomicWriter struct {
	targetDir string
}

// NewAtomicWriter returns a writer for targetDir, which must exist.
func NewAtomicWriter(targetDir string) (*AtomicWriter, error) {
	if _, err := os.Stat(targetDir); err != nil {
		return nil, err
	}
	return &AtomicWriter{targetDir: targetDir}, nil
}

// Write makes the target directory hold exactly payload, keyed by relative
// path. Matches the kubelet's AtomicWriter.Write:
//  1. the paths are checked (relative, no "..", not starting with "..");
//  2. when "..data" already holds this content and no file must go, only
//     the user-visible symlinks are checked;
//  3. otherwise the files are written to a new "..YYYY_MM_DD_HH_MM_SS.N"
//     directory with exactly their mode, setPerms (if not nil) is run on
//     that directory, "..data_tmp" is pointed at it and renamed over
//     "..data";
//  4. a symlink "<first path element> -> ..data/<first path element>" is
//     made for each new top-level entry, those of removed ones deleted, and
//     the old timestamped directory removed.
func (w *AtomicWriter) Write(payload map[string]FileProjection, setPerms func(dir string) error) error {
	clean, err := validatePayload(payload)
	if err != nil {
		return err
	}
	dataDirPath := filepath.Join(w.targetDir, dataDirName)
	oldTsDir, err := os.Readlink(dataDirPath)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read the data directory link: %w", err)
		}
		oldTsDir = ""
	}
	oldTsPath := filepath.Join(w.targetDir, oldTsDir)

	var toRemove []string
	write := true
	if oldTsDir != "" {
		if toRemove, err = pathsToRemove(clean, oldTsPath); err != nil {
			return err
		}
		should, err := shouldWritePayload(clean, oldTsPath, setPerms == nil)
		if err != nil {
			return err
		}
		if !should && len(toRemove) == 0 {
			// Up to date; only the visible links are made sure of.
			write, oldTsDir = false, ""
		}
	}

	if write {
		tsDir, err := w.newTimestampDir()
		if err != nil {
			return err
		}
		if err := writePayloadToDir(clean, tsDir); err != nil {
			_ = os.RemoveAll(tsDir)
			return err
		}
		if setPerms != nil {
			if err := setPerms(tsDir); err != nil {
				_ = os.RemoveAll(tsDir)
				return fmt.Errorf("apply ownership settings: %w", err)
			}
		}
		newDataDirPath := filepath.Join(w.targetDir, newDataDirName)
		_ = os.Remove(newDataDirPath) // left over by an interrupted write
		if err := os.Symlink(filepath.Base(tsDir), newDataDirPath); err != nil {
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("create the data directory link: %w", err)
		}
		if err := os.Rename(newDataDirPath, dataDirPath); err != nil {
			_ = os.Remove(newDataDirPath)
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("swap the data directory link: %w", err)
		}
	}

	if err := w.createUserVisibleFiles(clean); err != nil {
		return err
	}
	if err := w.removeUserVisiblePaths(toRemove); err != nil {
		return err
	}
	if oldTsDir != "" {
		if err := os.RemoveAll(oldTsPath); err != nil {
			return fmt.Errorf("remove the old data directory: %w", err)
		}
	}
	return nil
}

// validatePayload returns the payload with cleaned paths, or an error
// naming an invalid one. Matches the kubelet's validatePayload.
func validatePayload(payload map[string]FileProjection) (map[string]FileProjection, error) {
	clean := make(map[string]FileProjection, len(payload))
	for p, content := range payload {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		clean[filepath.Clean(p)] = content
	}
	return clean, nil
}

// validatePath matches the kubelet's validatePath.
func validatePath(targetPath string) error {
	if targetPath == "" {
		return errors.New("invalid path: must not be empty")
	}
	if path.IsAbs(targetPath) {
		return fmt.Errorf("invalid path: must be relative path: %s", targetPath)
	}
	if len(targetPath) > maxPathLength {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	items := strings.Split(targetPath, string(os.PathSeparator))
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", targetPath)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", targetPath)
	}
	return nil
}

// shouldWritePayload reports whether a file of payload is missing from, or
// differs in content from, the old timestamped directory, or, with
// compareModes, in mode. The kubelet's compares content only; a changed
// defaultMode must reach the files too, unless setPerms changes modes
// after the write.
func shouldWritePayload(payload map[string]FileProjection, oldTsDir string, compareModes bool) (bool, error) {
	for p, fp := range payload {
		full := filepath.Join(oldTsDir, p)
		fi, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if compareModes && fi.Mode().Perm() != os.FileMode(fp.Mode).Perm() {
			return true, nil
		}
		onDisk, err := os.ReadFile(full)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(onDisk, fp.Data) {
			return true, nil
		}
	}
	return false, nil
}

// pathsToRemove returns the paths of the old timestamped directory that
// payload no longer has (parents of new files excluded). Matches the
// kubelet's pathsToRemove.
func pathsToRemove(payload map[string]FileProjection, oldTsDir string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for sub := p; sub != "." && sub != ""; sub = filepath.Dir(sub) {
			keep[sub] = true
		}
	}
	var remove []string
	err := filepath.Walk(oldTsDir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, rerr := filepath.Rel(oldTsDir, p)
		if rerr != nil || rel == "." {
			return rerr
		}
		if !keep[rel] {
			remove = append(remove, rel)
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the old data directory: %w", err)
	}
	slices.Sort(remove)
	return remove, nil
}

// newTimestampDir creates the "..<UTC time>.<random>" directory a write
// goes to, mode 0755 whatever the umask so that any container user can
// traverse it.
func (w *AtomicWriter) newTimestampDir() (string, error) {
	tsDir, err := os.MkdirTemp(w.targetDir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", fmt.Errorf("create a data directory: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return "", fmt.Errorf("set the mode of %s: %w", tsDir, err)
	}
	return tsDir, nil
}

// writePayloadToDir writes each file with exactly its mode, whatever the
// umask.
func writePayloadToDir(payload map[string]FileProjection, dir string) error {
	for p, fp := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create directory for %s: %w", p, err)
		}
		mode := os.FileMode(fp.Mode)
		if err := os.WriteFile(full, fp.Data, mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("set the mode of %s: %w", p, err)
		}
	}
	return nil
}

// createUserVisibleFiles links each top-level entry of payload through
// "..data". Matches the kubelet's createUserVisibleFiles.
func (w *AtomicWriter) createUserVisibleFiles(payload map[string]FileProjection) error {
	for p := range payload {
		top, _, _ := strings.Cut(p, string(os.PathSeparator))
		visible := filepath.Join(w.targetDir, top)
		if _, err := os.Readlink(visible); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), visible); err != nil {
			return fmt.Errorf("link %s: %w", top, err)
		}
	}
	return nil
}

// removeUserVisiblePaths removes the top-level links of removed entries.
// Matches the kubelet's removeUserVisiblePaths.
func (w *AtomicWriter) removeUserVisiblePaths(paths []string) error {
	var errs []error
	for _, p := range paths {
		if strings.Contains(p, string(os.PathSeparator)) {
			continue
		}
		if err := os.Remove(filepath.Join(w.targetDir, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SetVolumeOwnership gives dir and everything under it the group fsGroup
// and makes it readable (and directories traversable, setgid) by that
// group, symlinks excepted. Matches the kubelet's SetVolumeOwnership with
// changeFilePermission for a read-only volume, which configMap, secret,
// downwardAPI and projected volumes are.
func SetVolumeOwnership(dir string, fsGroup int64) error {
	return setOwnership(dir, fsGroup, 0o440)
}

// SetWritableVolumeOwnership is SetVolumeOwnership for a writable volume
// (an emptyDir): the group may also write (the kubelet's rwMask), so new
// files a container of the pod makes inherit the group through the setgid
// directories. A volume whose root already has the group and the setgid
// bit is left alone, as the kubelet's fsGroupChangePolicy OnRootMismatch
// does, so files containers made keep their modes on the next start.
func SetWritableVolumeOwnership(dir string, fsGroup int64) error {
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int64(st.Gid) == fsGroup && fi.Mode()&os.ModeSetgid != 0 {
			return nil
		}
	}
	return setOwnership(dir, fsGroup, 0o660)
}

func setOwnership(dir string, fsGroup int64, fileMask os.FileMode) error {
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		mask := fileMask
		if info.IsDir() {
			mask |= os.ModeSetgid | 0o110
		}
		return os.Chmod(p, info.Mode()|mask)
	})
}

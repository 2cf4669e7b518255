package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/manifest"
	"github.com/splitlet/splitlet/services/sync/internal/validation"
)

// InvalidManifestFunc is told about a manifest file whose pods are not
// started, with the reason; the sync loop records it as an event.
type InvalidManifestFunc func(path string, err error)

// FileSource reads static pods from a manifest directory, like the kubelet's
// file source (pkg/kubelet/config/file.go): every regular file not starting
// with a dot is read, each may hold several YAML or JSON documents. A file
// that fails to decode or validate is reported and contributes no pods; the
// other files still count. Like the kubelet's, it watches the directory with
// inotify (fsnotify) so a change is seen at once, and re-reads it every
// period anyway, which also covers a directory created after start.
type FileSource struct {
	dir       string
	nodeName  string
	period    time.Duration
	cfg       *PodConfig
	onInvalid InvalidManifestFunc
	// reported remembers the last error per file so an invalid file is
	// reported once, not on every poll.
	reported map[string]string
}

// NewFileSource returns a source reading dir into cfg every period.
func NewFileSource(dir, nodeName string, period time.Duration, cfg *PodConfig, onInvalid InvalidManifestFunc) *FileSource {
	if onInvalid == nil {
		onInvalid = func(string, error) {}
	}
	return &FileSource{dir: dir, nodeName: nodeName, period: period, cfg: cfg, onInvalid: onInvalid, reported: map[string]string{}}
}

// Run reads the directory at once, then on every change inotify reports and
// every period, until ctx ends.
func (f *FileSource) Run(ctx context.Context) {
	log := logctx.From(ctx).With(zap.String("source", FileSourceName), zap.String("dir", f.dir))
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("cannot watch the manifest directory, polling only", zap.Error(err))
	}
	var changes <-chan fsnotify.Event
	var watchErrs <-chan error
	if watcher != nil {
		defer watcher.Close()
		changes, watchErrs = watcher.Events, watcher.Errors
	}
	watching := false
	dir := filepath.Clean(f.dir)
	t := time.NewTicker(f.period)
	defer t.Stop()
	for {
		if watcher != nil && !watching {
			// Fails while the directory does not exist; the next poll
			// tries again.
			watching = watcher.Add(dir) == nil
		}
		f.cfg.Set(ctx, FileSourceName, f.read(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case ev := <-changes:
			if filepath.Clean(ev.Name) == dir && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
				watching = false
			}
			// An editor writes a file in several steps: let them land,
			// then read once.
			f.settle(ctx, changes)
		case err := <-watchErrs:
			log.Warn("manifest directory watch error", zap.Error(err))
		}
	}
}

// settle waits until no change has arrived for settleDelay.
func (f *FileSource) settle(ctx context.Context, changes <-chan fsnotify.Event) {
	timer := time.NewTimer(settleDelay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			timer.Reset(settleDelay)
		case <-timer.C:
			return
		}
	}
}

// settleDelay is how long the directory must be quiet after a change before
// it is read.
const settleDelay = 100 * time.Millisecond

// read returns the valid pods of the directory. A missing directory holds no
// pods (the kubelet logs and waits for it to appear).
func (f *FileSource) read(ctx context.Context) []*v1.Pod {
	log := logctx.From(ctx).With(zap.String("source", FileSourceName), zap.String("dir", f.dir))
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		if !os.IsNotExist(err) {
			log.Warn("cannot read manifest directory", zap.Error(err))
		}
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var pods []*v1.Pod
	current := map[string]string{}
	for _, name := range names {
		path := filepath.Join(f.dir, name)
		filePods, err := readManifestFile(path, f.nodeName)
		if err != nil {
			current[path] = err.Error()
			if f.reported[path] != err.Error() {
				log.Error("invalid static pod manifest, its pods are not started", zap.String("file", path), zap.Error(err))
				f.onInvalid(path, err)
			}
			continue
		}
		pods = append(pods, filePods...)
	}
	f.reported = current
	return pods
}

// readManifestFile decodes, defaults and validates every pod of one file; any
// failure rejects the whole file, naming the document and field.
func readManifestFile(path, nodeName string) ([]*v1.Pod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pods, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return staticPods(pods, defaults.Source{Kind: defaults.SourceFile, Location: path}, nodeName)
}

// staticPods defaults and validates the decoded pods of one static-pod
// manifest (a file or a URL's answer), as the kubelet's applyDefaults and
// validation do for its file and HTTP sources, then refuses a pod that
// references API objects, as they do with PreventStaticPodAPIReferences
// (tryDecodeSinglePod, tryDecodePodList); any failure rejects them all,
// naming the origin, the document and the field.
func staticPods(pods []*v1.Pod, src defaults.Source, nodeName string) ([]*v1.Pod, error) {
	for i, pod := range pods {
		defaults.SetDefaults_Pod(pod)
		if err := defaults.ApplyStaticPodDefaults(pod, src, nodeName); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", src.Location, i, err)
		}
		if err := validation.AsError(validation.ValidatePod(pod)); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", src.Location, i, err)
		}
		if ref := validation.StaticPodAPIReference(pod); ref != nil {
			return nil, fmt.Errorf("%s: document %d: %w", src.Location, i, validation.AsError(field.ErrorList{ref}))
		}
	}
	return pods, nil
}

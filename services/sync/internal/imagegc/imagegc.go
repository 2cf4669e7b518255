// Package imagegc removes the images no container uses when the image
// filesystem fills, as the kubelet's image garbage collector
// (pkg/kubelet/images realImageGCManager) does:
//
//   - every Period, the images the runtime holds are recorded (first
//     detected, last used by a container of any state, size, pinned);
//   - images unused for longer than Policy.MaxAge are removed (off at 0,
//     the default; ImageMaximumGCAge, GA in v1.36), once MaxAge has passed
//     since sync started;
//   - when the image filesystem is at or above HighThresholdPercent full,
//     unused images are removed, least recently used first, until it
//     would be at LowThresholdPercent; an image seen for less than MinAge
//     (just pulled, about to be used) and a pinned one (the sandbox image)
//     are kept.
//
// Failures are logged and counted; the kubelet also records them as
// events on its Node, which sync does not have events for.
package imagegc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// Period is the kubelet's ImageGCPeriod.
const Period = 5 * time.Minute

// Policy is the kubelet's ImageGCPolicy; DefaultPolicy has its defaults.
type Policy struct {
	HighThresholdPercent int
	LowThresholdPercent  int
	MinAge               time.Duration
	MaxAge               time.Duration
}

// DefaultPolicy is the kubelet's: imageGCHighThresholdPercent 85,
// imageGCLowThresholdPercent 80, imageMinimumGCAge 2m, imageMaximumGCAge 0.
var DefaultPolicy = Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}

// Validate is NewImageGCManager's check, naming the kubelet's flags.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("--image-gc-high-threshold %d: must be in the range [0, 100]", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("--image-gc-low-threshold %d: must be in the range [0, 100]", p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf("--image-gc-low-threshold %d must not be above --image-gc-high-threshold %d", p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MaxAge != 0 && p.MaxAge < p.MinAge:
		return fmt.Errorf("--image-maximum-gc-age %s must be 0 or at least --image-minimum-gc-age %s", p.MaxAge, p.MinAge)
	}
	return nil
}

// Runtime lists containers, whose images (and the images they mount as
// volumes) are in use.
type Runtime interface {
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
}

// Images lists and removes images.
type Images interface {
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
	RemoveImage(ctx context.Context, in *runtimeapi.RemoveImageRequest, opts ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error)
}

// FsUsage is the image filesystem's capacity and available bytes (the
// kubelet's statsProvider.ImageFsStats).
type FsUsage func(ctx context.Context) (capacity, available int64, err error)

// Options are a Manager's dependencies; all but Registerer are required.
type Options struct {
	Policy     Policy
	Runtime    Runtime
	Images     Images
	FsUsage    FsUsage
	Registerer prometheus.Registerer
	Now        func() time.Time // nil: time.Now
}

// Manager is the image garbage collector.
type Manager struct {
	opts      Options
	began     time.Time
	collected *prometheus.CounterVec

	mu      sync.Mutex
	records map[string]*record // by image ID
}

type record struct {
	firstDetected time.Time
	lastUsed      time.Time
	size          int64
	pinned        bool
}

// New makes a Manager; the policy must be valid.
func New(opts Options) (*Manager, error) {
	if err := opts.Policy.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{
		opts:    opts,
		began:   opts.Now(),
		records: map[string]*record{},
		collected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "splitlet", Subsystem: "sync", Name: "image_garbage_collected_total",
			Help: "Images removed by the image garbage collector, by reason: age or space (the kubelet's kubelet_image_garbage_collected_total).",
		}, []string{"reason"}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(m.collected)
	}
	return m, nil
}

// Run collects at once and then every Period until ctx ends, as the
// kubelet's StartGarbageCollection.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(Period)
	defer t.Stop()
	for {
		if err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Warn("image garbage collection failed", zap.String("reason", "ImageGCFailed"), zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// GarbageCollect removes the images past MaxAge, then frees space down to
// the low threshold if the image filesystem is above the high one.
// Matches the kubelet's GarbageCollect.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	freeTime := m.opts.Now()
	images, err := m.inEvictionOrder(ctx, freeTime)
	if err != nil {
		return err
	}
	if images, err = m.freeOld(ctx, images, freeTime); err != nil {
		return err
	}
	capacity, available, err := m.opts.FsUsage(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem usage: %w", err)
	}
	available = min(available, capacity)
	if capacity <= 0 {
		return errors.New("invalid capacity 0 on image filesystem")
	}
	usage := 100 - int(available*100/capacity)
	if usage < m.opts.Policy.HighThresholdPercent {
		return nil
	}
	toFree := capacity*int64(100-m.opts.Policy.LowThresholdPercent)/100 - available
	logctx.From(ctx).Info("image filesystem over the high threshold: freeing down to the low threshold",
		zap.Int("usagePercent", usage), zap.Int("highThreshold", m.opts.Policy.HighThresholdPercent),
		zap.Int64("bytesToFree", toFree), zap.Int("lowThreshold", m.opts.Policy.LowThresholdPercent))
	freed, err := m.freeSpace(ctx, toFree, freeTime, images)
	if err != nil {
		return err
	}
	if freed < toFree {
		return fmt.Errorf("insufficient free disk space on the node's image filesystem (%d%% of %d bytes used): "+
			"freed %d bytes by deleting unused images; active images, logs, volumes or other data use the rest",
			usage, capacity, freed)
	}
	return nil
}

// DeleteUnusedImages removes every image no container uses, but pinned
// ones and those seen for less than MinAge, whatever the usage and the
// thresholds, and returns the bytes the removed images took: what the
// eviction manager asks for under disk pressure before it evicts pods.
// Matches the kubelet's DeleteUnusedImages (freeSpace with no bound).
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	logctx.From(ctx).Info("attempting to delete unused images")
	freeTime := m.opts.Now()
	images, err := m.inEvictionOrder(ctx, freeTime)
	if err != nil {
		return 0, err
	}
	return m.freeSpace(ctx, math.MaxInt64, freeTime, images)
}

// candidate is an unused image and its record.
type candidate struct {
	id string
	record
}

// inEvictionOrder refreshes the records and returns the unused, unpinned
// images, least recently used first (ties: first detected first).
// Matches the kubelet's imagesInEvictionOrder.
func (m *Manager) inEvictionOrder(ctx context.Context, now time.Time) ([]candidate, error) {
	inUse, err := m.detect(ctx, now)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []candidate
	for id, r := range m.records {
		if !inUse[id] && !r.pinned {
			out = append(out, candidate{id: id, record: *r})
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if c := a.lastUsed.Compare(b.lastUsed); c != 0 {
			return c
		}
		return cmp.Or(a.firstDetected.Compare(b.firstDetected), cmp.Compare(a.id, b.id))
	})
	return out, nil
}

// detect records the runtime's images and which of them a container, of
// any state, uses. Matches the kubelet's detectImages.
func (m *Manager) detect(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := m.opts.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	containers, err := m.opts.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	inUse := make(map[string]bool)
	for _, c := range containers.GetContainers() {
		inUse[c.GetImageRef()] = true
	}
	if err := m.imageVolumesInUse(ctx, containers.GetContainers(), images.GetImages(), inUse); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	current := make(map[string]bool, len(images.GetImages()))
	for _, img := range images.GetImages() {
		id := img.GetId()
		current[id] = true
		r, ok := m.records[id]
		if !ok {
			r = &record{firstDetected: now}
			m.records[id] = r
		}
		if inUse[id] {
			r.lastUsed = now
		}
		r.size = int64(img.GetSize())
		r.pinned = img.GetPinned()
	}
	for id := range m.records {
		if !current[id] {
			delete(m.records, id)
		}
	}
	return inUse, nil
}

// imageVolumesInUse adds to inUse the images the containers mount as
// image volumes (ImageVolume), which their status's mounts name by ID or
// by reference. Matches the kubelet's handleImageVolumes.
func (m *Manager) imageVolumesInUse(ctx context.Context, containers []*runtimeapi.Container, images []*runtimeapi.Image, inUse map[string]bool) error {
	byRef := make(map[string]string)
	for _, img := range images {
		byRef[img.GetId()] = img.GetId()
		for _, ref := range append(slices.Clone(img.GetRepoTags()), img.GetRepoDigests()...) {
			byRef[ref] = img.GetId()
		}
	}
	for _, c := range containers {
		st, err := m.opts.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		if err != nil {
			if status.Code(err) == codes.NotFound {
				continue // removed since the list
			}
			return fmt.Errorf("container %s status: %w", c.GetId(), err)
		}
		for _, mount := range st.GetStatus().GetMounts() {
			if ref := mount.GetImage().GetImage(); ref != "" {
				inUse[cmp.Or(byRef[ref], ref)] = true
			}
		}
	}
	return nil
}

// freeOld removes the images unused for longer than MaxAge and returns the
// others. Matches the kubelet's freeOldImages.
func (m *Manager) freeOld(ctx context.Context, images []candidate, freeTime time.Time) ([]candidate, error) {
	maxAge := m.opts.Policy.MaxAge
	// Until MaxAge has passed since sync started, an image's last use may
	// simply not have been seen yet.
	if maxAge == 0 || freeTime.Sub(m.began) <= maxAge {
		return images, nil
	}
	var left []candidate
	var errs []error
	for _, img := range images {
		if freeTime.Sub(img.lastUsed) <= maxAge {
			left = append(left, img)
			continue
		}
		if err := m.remove(ctx, img, "age"); err != nil {
			errs = append(errs, err)
			left = append(left, img)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return left, fmt.Errorf("free images unused for over %s: %w", maxAge, err)
	}
	return left, nil
}

// freeSpace removes images in order until bytesToFree are freed, keeping
// those used at freeTime or detected less than MinAge ago, and returns the
// bytes freed. Matches the kubelet's freeSpace.
func (m *Manager) freeSpace(ctx context.Context, bytesToFree int64, freeTime time.Time, images []candidate) (int64, error) {
	var freed int64
	var errs []error
	for _, img := range images {
		if !img.lastUsed.Before(freeTime) || freeTime.Sub(img.firstDetected) < m.opts.Policy.MinAge {
			continue
		}
		if err := m.remove(ctx, img, "space"); err != nil {
			errs = append(errs, err)
			continue
		}
		if freed += img.size; freed >= bytesToFree {
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return freed, fmt.Errorf("wanted to free %d bytes, freed %d: %w", bytesToFree, freed, err)
	}
	return freed, nil
}

func (m *Manager) remove(ctx context.Context, img candidate, reason string) error {
	logctx.From(ctx).Info("removing an unused image", zap.String("imageID", img.id), zap.Int64("size", img.size), zap.String("reason", reason))
	if _, err := m.opts.Images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: img.id}}); err != nil {
		return fmt.Errorf("remove image %s: %w", img.id, err)
	}
	m.mu.Lock()
	delete(m.records, img.id)
	m.mu.Unlock()
	m.collected.WithLabelValues(reason).Inc()
	return nil
}

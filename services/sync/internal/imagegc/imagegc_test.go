package imagegc

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// node is a runtime holding images, containers using some of them, and an
// image filesystem whose free space grows by each removed image's size.
type node struct {
	mu         sync.Mutex
	mounts     map[string][]*runtimeapi.Mount // by container ID
	images     map[string]*runtimeapi.Image
	containers []*runtimeapi.Container
	capacity   int64
	available  int64
	removed    []string
	failRemove map[string]bool
}

func newNode(capacity, available int64) *node {
	return &node{images: map[string]*runtimeapi.Image{}, capacity: capacity, available: available, failRemove: map[string]bool{}}
}

func (n *node) image(id string, size uint64, pinned bool) {
	n.images[id] = &runtimeapi.Image{Id: id, Size: size, Pinned: pinned}
}

func (n *node) use(id string) {
	n.containers = append(n.containers, &runtimeapi.Container{Id: "c-" + id, ImageRef: id, State: runtimeapi.ContainerState_CONTAINER_EXITED})
}

func (n *node) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range n.images {
		out = append(out, img)
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

func (n *node) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &runtimeapi.ListContainersResponse{Containers: slices.Clone(n.containers)}, nil
}

func (n *node) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: req.GetContainerId(), Mounts: n.mounts[req.GetContainerId()]}}, nil
}

func (n *node) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := req.GetImage().GetImage()
	if n.failRemove[id] {
		return nil, errors.New("image is in use by a snapshot")
	}
	n.available += int64(n.images[id].GetSize())
	delete(n.images, id)
	n.removed = append(n.removed, id)
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (n *node) usage(context.Context) (int64, int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.capacity, n.available, nil
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newManager(t *testing.T, n *node, p Policy, c *clock) *Manager {
	t.Helper()
	m, err := New(Options{Policy: p, Runtime: n, Images: n, FsUsage: n.usage, Registerer: prometheus.NewRegistry(), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFreesLeastRecentlyUsedDownToTheLowThreshold(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	n := newNode(1000, 100) // 90% used, over 85%
	n.image("sha256:old", 60, false)
	n.image("sha256:older", 60, false)
	n.image("sha256:pause", 500, true)
	n.image("sha256:used", 500, false)
	n.use("sha256:used")
	m := newManager(t, n, DefaultPolicy, c)

	// older was last used before old: make that so by a first pass in
	// which only older is in use, then none.
	n.use("sha256:older")
	if err := m.GarbageCollect(context.Background()); err == nil {
		t.Fatal("first pass: want an error, every unused image is younger than MinAge")
	}
	n.containers = n.containers[:1] // only "used" remains
	c.now = c.now.Add(time.Minute)
	if err := m.GarbageCollect(context.Background()); err == nil {
		t.Fatal("second pass: images still younger than MinAge, want an error")
	}
	if len(n.removed) != 0 {
		t.Fatalf("removed %v before MinAge", n.removed)
	}

	c.now = c.now.Add(2 * time.Minute)
	// 100 available of 1000; the low threshold (80%) wants 200: 100 more,
	// two images of 60, the least recently used first.
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	if !slices.Equal(n.removed, []string{"sha256:old", "sha256:older"}) {
		t.Errorf("removed %v, want old (never used) then older (used once)", n.removed)
	}
	if n.images["sha256:pause"] == nil || n.images["sha256:used"] == nil {
		t.Errorf("a pinned or used image was removed: %v", n.removed)
	}
	if got := testutil.ToFloat64(m.collected.WithLabelValues("space")); got != 2 {
		t.Errorf("image_garbage_collected_total{space} = %v, want 2", got)
	}
}

func TestBelowTheHighThresholdNothingIsRemoved(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	n := newNode(1000, 200) // 80% used
	n.image("sha256:unused", 100, false)
	m := newManager(t, n, DefaultPolicy, c)
	c.now = c.now.Add(time.Hour)
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(n.removed) != 0 {
		t.Errorf("removed %v at 80%% usage", n.removed)
	}
}

func TestMaxAgeRemovesLongUnusedImagesOnceSyncHasRunThatLong(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	n := newNode(1000, 900) // plenty of space
	n.image("sha256:stale", 10, false)
	n.image("sha256:fresh", 10, false)
	p := DefaultPolicy
	p.MaxAge = time.Hour
	m := newManager(t, n, p, c)
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(50 * time.Minute)
	n.use("sha256:fresh")
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.containers = nil
	c.now = c.now.Add(20 * time.Minute) // 70 min since start; stale unused 70, fresh 20
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.removed, []string{"sha256:stale"}) {
		t.Errorf("removed %v, want only the image unused for over an hour", n.removed)
	}
}

func TestRemovalFailuresAreReportedAndTheRestGoOn(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	n := newNode(1000, 0)
	n.image("sha256:a", 100, false)
	n.image("sha256:b", 100, false)
	n.failRemove["sha256:a"] = true
	m := newManager(t, n, DefaultPolicy, c)
	m.GarbageCollect(context.Background())
	c.now = c.now.Add(time.Hour)
	err := m.GarbageCollect(context.Background())
	if err == nil || !slices.Equal(n.removed, []string{"sha256:b"}) {
		t.Errorf("err %v, removed %v; want an error naming a, and b removed", err, n.removed)
	}
}

func TestPolicyValidation(t *testing.T) {
	for _, p := range []Policy{
		{HighThresholdPercent: 101, LowThresholdPercent: 80},
		{HighThresholdPercent: 80, LowThresholdPercent: 85},
		{HighThresholdPercent: 85, LowThresholdPercent: -1},
		{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Hour, MaxAge: time.Minute},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", p)
		}
	}
	if err := DefaultPolicy.Validate(); err != nil {
		t.Errorf("the default policy: %v", err)
	}
}

// An image a container mounts as an image volume is in use, whether the
// mount names it by ID or by a tag.
func TestImagesMountedAsVolumesAreInUse(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	n := newNode(1000, 0)
	n.image("sha256:app", 100, false)
	n.image("sha256:byid", 100, false)
	n.images["sha256:bytag"] = &runtimeapi.Image{Id: "sha256:bytag", Size: 100, RepoTags: []string{"docker.io/library/data:1"}}
	n.image("sha256:unused", 100, false)
	n.use("sha256:app")
	n.mounts = map[string][]*runtimeapi.Mount{"c-sha256:app": {
		{ContainerPath: "/a", Image: &runtimeapi.ImageSpec{Image: "sha256:byid"}},
		{ContainerPath: "/b", Image: &runtimeapi.ImageSpec{Image: "docker.io/library/data:1"}},
	}}
	m := newManager(t, n, DefaultPolicy, c)
	m.GarbageCollect(context.Background())
	c.now = c.now.Add(time.Hour)
	m.GarbageCollect(context.Background())
	if !slices.Equal(n.removed, []string{"sha256:unused"}) {
		t.Errorf("removed %v, want only the image nothing uses or mounts", n.removed)
	}
}

// DeleteUnusedImages removes every unused image past MinAge whatever the
// thresholds (the disk is nearly empty here), keeps pinned, used and young
// ones, and says how many bytes went.
func TestDeleteUnusedImagesIgnoresTheThresholds(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	n := newNode(1000, 900) // 10% used, far under the high threshold
	n.image("sha256:a", 30, false)
	n.image("sha256:b", 40, false)
	n.image("sha256:pause", 500, true)
	n.image("sha256:used", 100, false)
	n.use("sha256:used")
	m := newManager(t, n, DefaultPolicy, c)
	freed, err := m.DeleteUnusedImages(context.Background())
	if err != nil || freed != 0 || len(n.removed) != 0 {
		t.Fatalf("first sight: freed %d, removed %v, err %v; want nothing, every image is younger than MinAge", freed, n.removed, err)
	}
	c.now = c.now.Add(DefaultPolicy.MinAge)
	n.image("sha256:young", 50, false)
	freed, err = m.DeleteUnusedImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(n.removed)
	if !slices.Equal(n.removed, []string{"sha256:a", "sha256:b"}) || freed != 70 {
		t.Errorf("removed %v (%d bytes), want a and b (70 bytes): not pinned, used or young ones", n.removed, freed)
	}
}

package fake

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// store is the runtime's state. Every field is guarded by Runtime.mu.
type store struct {
	sandboxes  map[string]*sandbox
	containers map[string]*container
	// By PodUIDLabel value (index.go); changed only through addSandbox,
	// deleteSandbox, addContainer and deleteContainer.
	sandboxesByPod  podIndex[sandbox]
	containersByPod podIndex[container]
	images          map[string]*image // by image ID ("sha256:...")
	imageRefs       map[string]string // normalised reference -> image ID

	// Name reservations as containerd's registrar keeps them: a name stays
	// reserved for its ID until the sandbox or container is removed.
	sandboxNames   map[string]string
	containerNames map[string]string

	ips *ipAllocator

	podCIDR string // recorded by UpdateRuntimeConfig
}

func newStore() *store {
	return &store{
		sandboxes:       make(map[string]*sandbox),
		containers:      make(map[string]*container),
		sandboxesByPod:  make(podIndex[sandbox]),
		containersByPod: make(podIndex[container]),
		images:          make(map[string]*image),
		imageRefs:       make(map[string]string),
		sandboxNames:    make(map[string]string),
		containerNames:  make(map[string]string),
		ips:             newIPAllocator(),
	}
}

// sandbox is a pod sandbox. Its config is a private clone of the request's.
type sandbox struct {
	id         string
	name       string
	config     *runtimeapi.PodSandboxConfig
	handler    string
	state      runtimeapi.PodSandboxState
	createdAt  int64
	ip         string
	hostNet    bool
	containers map[string]*container // per-sandbox index for pod_sandbox_id filters
	overhead   *runtimeapi.LinuxContainerResources
	resources  *runtimeapi.LinuxContainerResources
}

// container is a container. Timestamps are Unix nanoseconds.
type container struct {
	id        string
	name      string
	sb        *sandbox
	config    *runtimeapi.ContainerConfig
	imageID   string // "sha256:..."
	imageRef  string // repo digest, as containerd reports image_ref
	imageName string // what the status reports as image
	logPath   string

	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	starting   bool
	removing   bool
	resources  *runtimeapi.ContainerResources

	beh       behavior
	execCalls int

	// timer ends the container after beh.after; exited is closed when the
	// container leaves RUNNING so a stop waiting out its grace period wakes.
	timer  *time.Timer
	exited chan struct{}

	lastCPU uint64 // keeps reported CPU usage monotonic
}

// stopTimer cancels the scripted exit, if any.
func (c *container) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// image is an image "pulled" into the fake.
type image struct {
	id          string
	repoTags    []string
	repoDigests []string
	size        uint64
	spec        string // the normalised reference it was pulled by
}

// newID returns a random 64-hex ID like containerd's util.GenerateID.
func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("fake: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// reserve records name for id in names, failing like containerd's
// registrar.Reserve when the name is held by another ID.
func reserve(names map[string]string, name, id string) error {
	if held, ok := names[name]; ok && held != id {
		return fmt.Errorf("name %q is reserved for %q: %w", name, held, errdefs.ErrConflict)
	}
	names[name] = id
	return nil
}

// makeSandboxName builds the reservation key containerd's makeSandboxName
// builds: name_namespace_uid_attempt.
func makeSandboxName(m *runtimeapi.PodSandboxMetadata) string {
	return strings.Join([]string{m.GetName(), m.GetNamespace(), m.GetUid(), fmt.Sprint(m.GetAttempt())}, "_")
}

// makeContainerName builds the reservation key containerd's
// makeContainerName builds: container_pod_namespace_uid_attempt.
func makeContainerName(c *runtimeapi.ContainerMetadata, s *runtimeapi.PodSandboxMetadata) string {
	return strings.Join([]string{c.GetName(), s.GetName(), s.GetNamespace(), s.GetUid(), fmt.Sprint(c.GetAttempt())}, "_")
}

// resolve finds the full ID for id: an exact match in O(1), else a unique
// prefix as containerd's truncindex accepts. Ambiguous or unknown IDs are
// NotFound.
func resolve[T any](m map[string]*T, id string) (*T, error) {
	if id == "" {
		return nil, fmt.Errorf("empty ID: %w", errdefs.ErrNotFound)
	}
	if v, ok := m[id]; ok {
		return v, nil
	}
	var found *T
	n := 0
	for k, v := range m {
		if strings.HasPrefix(k, id) {
			found = v
			n++
			if n > 1 {
				return nil, fmt.Errorf("ID prefix %q is ambiguous: %w", id, errdefs.ErrNotFound)
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%q: %w", id, errdefs.ErrNotFound)
	}
	return found, nil
}

func (s *store) sandbox(id string) (*sandbox, error) {
	sb, err := resolve(s.sandboxes, id)
	if err != nil {
		return nil, fmt.Errorf("sandbox %w", err)
	}
	return sb, nil
}

func (s *store) container(id string) (*container, error) {
	c, err := resolve(s.containers, id)
	if err != nil {
		return nil, fmt.Errorf("container %w", err)
	}
	return c, nil
}

// ipAllocator hands out pod IPs from 10.88.0.0/16, the subnet of
// containerd's default CNI bridge config. Freed addresses are reused.
type ipAllocator struct {
	next netip.Addr
	last netip.Addr
	free []netip.Addr
}

func newIPAllocator() *ipAllocator {
	return &ipAllocator{
		next: netip.MustParseAddr("10.88.0.2"), // .1 is the bridge
		last: netip.MustParseAddr("10.88.255.254"),
	}
}

func (a *ipAllocator) allocate() (string, error) {
	if n := len(a.free); n > 0 {
		ip := a.free[n-1]
		a.free = a.free[:n-1]
		return ip.String(), nil
	}
	if a.next.Compare(a.last) > 0 {
		return "", fmt.Errorf("pod network 10.88.0.0/16 has no free address: %w", errdefs.ErrResourceExhausted)
	}
	ip := a.next
	a.next = a.next.Next()
	return ip.String(), nil
}

func (a *ipAllocator) release(ip string) {
	if addr, err := netip.ParseAddr(ip); err == nil {
		a.free = append(a.free, addr)
	}
}

// matchLabels reports whether labels hold every selector pair.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// cloneMap copies a map so callers never share internal state; nil stays nil.
func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

// copySandboxMetadata and copyContainerMetadata copy the metadata every
// status and list item carries field by field: proto.CloneOf goes through
// reflection and cost three times as much on these hot paths.
// TestMetadataCopiesEveryField fails when the CRI adds a field.
func copySandboxMetadata(m *runtimeapi.PodSandboxMetadata) *runtimeapi.PodSandboxMetadata {
	if m == nil {
		return nil
	}
	return &runtimeapi.PodSandboxMetadata{Name: m.Name, Uid: m.Uid, Namespace: m.Namespace, Attempt: m.Attempt}
}

func copyContainerMetadata(m *runtimeapi.ContainerMetadata) *runtimeapi.ContainerMetadata {
	if m == nil {
		return nil
	}
	return &runtimeapi.ContainerMetadata{Name: m.Name, Attempt: m.Attempt}
}

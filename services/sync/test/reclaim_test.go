package test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Under disk pressure the eviction manager of splitlet-admission first asks
// sync, on the eviction stream, to reclaim node-level resources: sync
// removes the images no container uses and reports back (ReportReclaim),
// as the kubelet's eviction manager has its image GC do before evicting.
// Pressure comes from a soft nodefs threshold no machine can satisfy
// (below 1Pi), so the reclaim never relieves it; what it freed is in
// admission's log.
func TestDiskPressureReclaimsUnusedImages(t *testing.T) {
	eviction := `  hard: {}
  soft: {nodefs.available: 1Pi}
  softGracePeriod: {nodefs.available: 1s}
  maxPodGracePeriodSeconds: 1
  evaluationInterval: 500ms
`
	s := admissionStack(t, stackOptions{syncArgs: []string{"--image-minimum-gc-age=0"}}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 10, eviction)
	})
	const image = "registry.local/reclaim-me:1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Images().PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the unused image removed", func() (bool, string) {
		resp, err := s.Images().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
		if err != nil {
			return false, err.Error()
		}
		if resp.GetImage() != nil {
			return false, "still listed"
		}
		return true, ""
	})
	waitFor(t, 30*time.Second, "admission's log of a reclaim that freed bytes", func() (bool, string) {
		data, err := os.ReadFile(s.Admission.LogPath)
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "node-level reclaim done") && !strings.Contains(line, `"imageBytesFreed":0`) {
				return true, ""
			}
		}
		return false, "not in admission's log"
	})
	data, err := os.ReadFile(s.Sync.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if log := string(data); !strings.Contains(log, "node-level reclaim requested by the eviction manager") ||
		!strings.Contains(log, "attempting to delete unused containers") {
		t.Errorf("sync's log does not show the reclaim request and the container GC it ran")
	}
}

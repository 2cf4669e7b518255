package daemon

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
)

// The downward API's default limits follow admission's allocatable; while
// admission cannot answer, the last answer stands, and the machine's before
// there is one.
func TestNodeAllocatable(t *testing.T) {
	admission := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("3Gi")}
	var fail bool
	report := func(context.Context) (apiserver.NodeReport, error) {
		if fail {
			return apiserver.NodeReport{}, errors.New("admission away")
		}
		return apiserver.NodeReport{Allocatable: admission}, nil
	}
	// A zero TTL asks report every time.
	get := nodeAllocatable(report, 0)
	fail = true
	m, _ := machineReport(context.Background())
	if got := get(); !got.Cpu().Equal(*m.Allocatable.Cpu()) {
		t.Errorf("before admission answered: %v, want the machine's %v", got, m.Allocatable)
	}
	fail = false
	if got := get(); !got.Memory().Equal(resource.MustParse("3Gi")) {
		t.Errorf("admission answering: %v, want its %v", got, admission)
	}
	fail = true
	if got := get(); !got.Cpu().Equal(resource.MustParse("1500m")) {
		t.Errorf("after admission went away: %v, want its last answer", got)
	}
}

package source

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/store"
)

// Benchmarks of the pod sources. The cost of one more pod must not grow
// with the pods a source already holds:
//
//	go test ./internal/source -run '^$' -bench . -benchtime 300x -benchmem

var existingSizes = []int{100, 1000, 5000}

func podManifest(name string) []byte {
	return []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - {name: c, image: busybox:1.36}\n")
}

// discard reads a mux's updates until ctx ends, as the sync loop would.
func discard(ctx context.Context, c *PodConfig) {
	go func() {
		for {
			select {
			case <-c.Updates():
			case <-ctx.Done():
				return
			}
		}
	}()
}

// BenchmarkPodConfigSetOneMore is what a publish of the full set costs when
// it holds one new pod: the way the API source published before Merge.
func BenchmarkPodConfigSetOneMore(b *testing.B) {
	for _, n := range existingSizes {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := NewPodConfig(APISourceName)
			discard(ctx, c)
			pods := make([]*v1.Pod, 0, n+b.N)
			for i := range n {
				pods = append(pods, testPod(fmt.Sprint("e", i), "x"))
			}
			c.Set(ctx, APISourceName, pods)
			b.ResetTimer()
			for i := range b.N {
				pods = append(pods, testPod(fmt.Sprint("n", i), "x"))
				c.Set(ctx, APISourceName, pods)
			}
		})
	}
}

// BenchmarkPodConfigMergeOne adds one new pod to a source holding n pods
// with Merge, as the API source publishes an Apply.
func BenchmarkPodConfigMergeOne(b *testing.B) {
	for _, n := range existingSizes {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := NewPodConfig(APISourceName)
			discard(ctx, c)
			pods := make([]*v1.Pod, 0, n)
			for i := range n {
				pods = append(pods, testPod(fmt.Sprint("e", i), "x"))
			}
			c.Set(ctx, APISourceName, pods)
			b.ResetTimer()
			for i := range b.N {
				c.Merge(ctx, APISourceName, ADD, []*v1.Pod{testPod(fmt.Sprint("n", i), "x")})
			}
		})
	}
}

// BenchmarkAPISourceApply applies one new pod at a time to a source that
// holds n pods, with a store in memory so the mux's and the source's own
// cost shows.
func BenchmarkAPISourceApply(b *testing.B) {
	for _, n := range existingSizes {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := newMemStore()
			for i := range n {
				p := testPod(fmt.Sprint("e", i), "x")
				p.Spec.NodeName = "node1"
				st.pods[p.Namespace+"/"+p.Name] = p
			}
			cfg := NewPodConfig(APISourceName)
			discard(ctx, cfg)
			a, err := NewAPISource(ctx, st, "node1", cfg)
			if err != nil {
				b.Fatal(err)
			}
			manifests := make([][]byte, b.N)
			for i := range manifests {
				manifests[i] = podManifest(fmt.Sprint("n", i))
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := a.Apply(ctx, manifests[i], false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAPISourceApplyConcurrent is issue 8's load on the API source
// alone: 32 callers each applying one pod at a time, persisted in a real
// bbolt store in a temporary directory (every Apply on disk when it
// returns).
func BenchmarkAPISourceApplyConcurrent(b *testing.B) {
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := store.Open(filepath.Join(b.TempDir(), "pods.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			cfg := NewPodConfig(APISourceName)
			discard(ctx, cfg)
			a, err := NewAPISource(ctx, st, "node1", cfg)
			if err != nil {
				b.Fatal(err)
			}
			manifests := make([][]byte, b.N)
			for i := range manifests {
				manifests[i] = podManifest(fmt.Sprint("p", i))
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range callers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if _, err := a.Apply(ctx, manifests[i], false); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
}

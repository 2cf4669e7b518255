package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkPutConcurrent measures one-pod Puts from several goroutines, as
// concurrent PodService Applies make them: each Put must be on disk when it
// returns, so the cost is dominated by the commit's fsync.
//
//	go test ./internal/store -run '^$' -bench PutConcurrent -benchtime 2000x
func BenchmarkPutConcurrent(b *testing.B) {
	for _, writers := range []int{1, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			st, err := Open(filepath.Join(b.TempDir(), "pods.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range writers {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := st.Put(pod("default", fmt.Sprintf("p%d", i), "busybox")); err != nil {
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

package status

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSecondsCopyIsRfc3339Copy: for zero, UTC, local, fixed-zone and
// monotonic times, and years at and past RFC 3339's range, secondsCopy
// gives exactly what Rfc3339Copy gives (location included).
func TestSecondsCopyIsRfc3339Copy(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 0), time.FixedZone("CET", 3600), time.FixedZone("", -(7*3600 + 30*60))}
	times := []time.Time{
		{},
		time.Now(),
		time.Unix(0, 0),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		times = append(times, time.Unix(r.Int64N(4e9)-1e9, r.Int64N(1e9)))
	}
	for _, base := range times {
		for _, zone := range zones {
			in := metav1.Time{Time: base.In(zone)}
			if base.IsZero() {
				in = metav1.Time{}
			}
			got, want := secondsCopy(in), in.Rfc3339Copy()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("secondsCopy(%v) = %#v, Rfc3339Copy gives %#v", in, got, want)
			}
		}
	}
}

// BenchmarkSecondsCopy against the kubelet's text round trip.
func BenchmarkSecondsCopy(b *testing.B) {
	in := metav1.Time{Time: time.Now().UTC()}
	b.Run("secondsCopy", func(b *testing.B) {
		for b.Loop() {
			_ = secondsCopy(in)
		}
	})
	b.Run("Rfc3339Copy", func(b *testing.B) {
		for b.Loop() {
			_ = in.Rfc3339Copy()
		}
	})
}

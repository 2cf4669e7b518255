package daemon

import (
	"io"
	"testing"
	"time"

	"github.com/splitlet/splitlet/services/sync/internal/backoff"
	"github.com/splitlet/splitlet/services/sync/internal/config"
)

// --max-container-restart-period caps the crash loop only, as the kubelet's
// maxContainerRestartPeriod does; image pulls keep MaxImageBackOff.
func TestBackOffCurves(t *testing.T) {
	for _, tc := range []struct {
		desc                 string
		args                 []string
		wantCrash, wantImage backoff.Config
	}{
		{
			desc:      "the kubelet's defaults",
			wantCrash: backoff.Config{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 600 * time.Second},
			wantImage: backoff.Config{Initial: 10 * time.Second, Max: 300 * time.Second},
		},
		{
			desc:      "a cap above the first delay",
			args:      []string{"--max-container-restart-period=1m"},
			wantCrash: backoff.Config{Initial: 10 * time.Second, Max: time.Minute, ResetAfter: 600 * time.Second},
			wantImage: backoff.Config{Initial: 10 * time.Second, Max: 300 * time.Second},
		},
		{
			desc:      "a cap below the first delay lowers it",
			args:      []string{"--max-container-restart-period=2s"},
			wantCrash: backoff.Config{Initial: 2 * time.Second, Max: 2 * time.Second, ResetAfter: 600 * time.Second},
			wantImage: backoff.Config{Initial: 10 * time.Second, Max: 300 * time.Second},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg, err := config.Parse(append([]string{"--node-name=n"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			crash, image := backOffCurves(cfg)
			if crash != tc.wantCrash || image != tc.wantImage {
				t.Fatalf("crash loop %+v, image pull %+v; want %+v, %+v", crash, image, tc.wantCrash, tc.wantImage)
			}
		})
	}
}

package validation

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/manifest"
)

// TestManifestPipeline runs a manifest file through the order a file source
// uses: decode, default, static-pod defaults, validate.
func TestManifestPipeline(t *testing.T) {
	const data = `apiVersion: v1
kind: Pod
metadata:
  name: good
spec:
  containers:
  - name: app
    image: nginx
    ports:
    - name: http
      containerPort: 80
    livenessProbe:
      httpGet:
        port: http
---
apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  initContainers:
  - name: app
    image: busybox
  containers:
  - name: app
  - name: two
    image: busybox
    readinessProbe:
      tcpSocket:
        port: metrics
`
	pods, err := manifest.Decode([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		want []wantErr
	}{
		{desc: "good pod passes"},
		{desc: "bad pod reports every problem by path", want: []wantErr{
			{field.ErrorTypeRequired, "spec.containers[0].image"},
			{field.ErrorTypeDuplicate, "spec.initContainers[0].name"},
			{field.ErrorTypeNotFound, "spec.containers[1].readinessProbe.tcpSocket.port"},
		}},
	}
	for i, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := pods[i]
			defaults.SetDefaults_Pod(p)
			if err := defaults.ApplyStaticPodDefaults(p, defaults.Source{Kind: defaults.SourceFile, Location: "/m/pods.yaml"}, "node-a"); err != nil {
				t.Fatal(err)
			}
			errs := ValidatePod(p)
			if got, want := errKeys(errs), wantKeys(tc.want); !slices.Equal(got, want) {
				t.Errorf("errors:\n got  %v\n want %v\n(%v)", got, want, errs)
			}
		})
	}
}

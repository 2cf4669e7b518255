package validation

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzValidatePod: validation and update validation never panic, whatever
// pod JSON can express (nil pointers, empty lists, odd quantities), and an
// unchanged pod is a valid update of itself when it is valid.
func FuzzValidatePod(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"a","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
		`{"metadata":{"name":"a"},"spec":{"initContainers":[{"name":"i","restartPolicy":"Always"}],"containers":[{"name":"c","resources":{"limits":{"cpu":"1e30"}}}]}}`,
		`{"spec":{"volumes":[{"name":"v","projected":{"sources":[{}]}}],"containers":[{"name":"c","volumeMounts":[{"name":"v","mountPath":"/x","subPath":"../y"}]}]}}`,
		`{"spec":{"ephemeralContainers":[{"name":"e","targetContainerName":"c"}],"securityContext":{"sysctls":[{"name":""}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod v1.Pod
		if json.Unmarshal(data, &pod) != nil {
			return
		}
		errs := ValidatePod(&pod)
		_ = AsError(errs)
		_ = ValidateNoAPIObjects(&pod)
		upd := ValidatePodUpdate(&pod, pod.DeepCopy())
		if len(errs) == 0 && len(upd) != 0 {
			t.Fatalf("a valid pod is not a valid update of itself: %v", upd)
		}
	})
}

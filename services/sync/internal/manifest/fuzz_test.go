package manifest

import (
	"reflect"
	"testing"
)

// FuzzDecode: no input makes the manifest decoder panic, a success
// returns pods only, and Decode's one-pass path for a single JSON pod
// gives what reading the input as a stream of documents gives, error
// text included.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{yamlTwoPods, jsonTwoPods, "", "---\n", "kind: Pod\n", `{"kind":"PodList","items":[{}]}`, benchManifest, benchManifest + "\n" + benchManifest, benchManifest + "\n---\nkind: Pod\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := Decode(data)
		streamPods, streamErr := decodeStream(data)
		if (err == nil) != (streamErr == nil) || (err != nil && err.Error() != streamErr.Error()) {
			t.Fatalf("Decode: %v; decodeStream: %v", err, streamErr)
		}
		if !reflect.DeepEqual(pods, streamPods) {
			t.Fatalf("Decode and decodeStream disagree:\n%#v\n%#v", pods, streamPods)
		}
		if err != nil {
			return
		}
		for i, p := range pods {
			if p == nil {
				t.Fatalf("pod %d of a successful decode is nil", i)
			}
		}
	})
}

package manifest

import "testing"

// FuzzDecode: no input makes the manifest decoder panic, and a success
// returns pods only.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{yamlTwoPods, jsonTwoPods, "", "---\n", "kind: Pod\n", `{"kind":"PodList","items":[{}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := Decode(data)
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

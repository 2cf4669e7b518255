package manifest

import "testing"

// benchManifest is the pod bench/ applies, one per Apply call.
const benchManifest = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bench-1","namespace":"default","labels":{"app":"bench"}},` +
	`"spec":{"restartPolicy":"Always","terminationGracePeriodSeconds":1,"containers":[{"name":"sleep","image":"registry.k8s.io/pause:3.10",` +
	`"imagePullPolicy":"IfNotPresent","command":["sleep","infinity"]}]}}`

// BenchmarkDecode: the cost of decoding one valid pod, which the Apply
// handler pays for every pod (go test -bench Decode -benchmem).
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct{ name, doc string }{
		{"json", benchManifest},
		{"yaml", yamlTwoPods},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data := []byte(tc.doc)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

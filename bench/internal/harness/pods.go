package harness

import (
	"fmt"
	"strings"
)

// benchImage is the one image every bench pod runs; the fake backend is
// started holding it, and the pods say IfNotPresent, so nothing is pulled.
const benchImage = "busybox:1.36"

// preloadImages is what the gateway's fake backend holds from the start: the
// container image and the kubelet's default pause image.
const preloadImages = benchImage + ",registry.k8s.io/pause:3.10"

// podNames returns n pod names, bench-00000 onwards; the zero padding keeps
// them sorted in directory listings.
func podNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("bench-%05d", i)
	}
	return out
}

// podManifest is the pod both splitlet and the kubelet run: one container
// that sleeps. The same JSON is a PodService manifest document and a
// static pod file.
func podManifest(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"default","labels":{"app":"bench"}},`+
		`"spec":{"restartPolicy":"Always","terminationGracePeriodSeconds":1,"containers":[{"name":"sleep","image":%q,`+
		`"imagePullPolicy":"IfNotPresent","command":["sleep","infinity"]}]}}`, name, benchImage)
}

// multiManifest joins the pods' manifests into one multi-document YAML
// stream (JSON documents are YAML).
func multiManifest(names []string) string {
	docs := make([]string, len(names))
	for i, name := range names {
		docs[i] = podManifest(name)
	}
	return strings.Join(docs, "\n---\n")
}

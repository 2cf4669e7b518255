package nodeapi

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/statusz"
	"k8s.io/component-base/compatibility"

	"github.com/splitlet/splitlet/services/sync/internal/nodefeatures"
)

// componentName names the component in /flagz and /statusz answers: the
// node API is the kubelet's, as the kubelet's server.ComponentKubelet.
const componentName = "kubelet"

// flagValues is a flagz.Reader over flags already read.
type flagValues map[string]string

func (f flagValues) GetFlagz() map[string]string { return f }

var _ flagz.Reader = flagValues(nil)

// installZpages adds the kubelet's /flagz (when flags is not nil) and
// /statusz (listing paths and /flagz) to mux, with k8s.io/apiserver's
// handlers as the kubelet's NewServer installs them under ComponentFlagz
// and ComponentStatusz (beta, on in v1.36): text/plain unless the Accept
// header asks for the structured Flagz or Statusz of config.k8s.io
// (v1alpha1 or v1beta1, JSON or YAML). /statusz reports the process's
// start time and uptime, the Go version, the kubelet release sync tracks
// as the binary version and the paths' first segments.
func installZpages(mux *http.ServeMux, paths []string, flags map[string]string) {
	if flags != nil {
		flagz.Install(mux, componentName, flagValues(flags))
		paths = append(paths, flagz.DefaultFlagzPath)
	}
	paths = append(paths, statusz.DefaultStatuszPath)
	version := compatibility.NewEffectiveVersionFromString(nodefeatures.KubeletVersion, "", "")
	statusz.Install(mux, componentName, statusz.NewRegistry(version, statusz.WithListedPaths(paths)))
}

// patternPath is the path of a ServeMux pattern ("GET /pods" is /pods).
func patternPath(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

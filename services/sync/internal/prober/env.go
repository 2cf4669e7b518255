package prober

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expandStaticEnv expands $(VAR) references in cmd with the container's
// literal env values (not valueFrom ones, which the prober cannot see).
// Matches the kubelet's kubecontainer.ExpandContainerCommandOnlyStatic and
// the expansion rules of k8s.io/kubernetes/third_party/forked/golang/expansion:
// "$$" is an escaped "$", and a reference to an unknown variable is kept
// as written.
func expandStaticEnv(cmd []string, env []v1.EnvVar) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expand(arg, vars)
	}
	return out
}

func expand(in string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		if in[i] != '$' || i+1 >= len(in) {
			b.WriteByte(in[i])
			continue
		}
		switch in[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(in[i+2:], ')')
			if end < 0 {
				b.WriteString(in[i:])
				return b.String()
			}
			name := in[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(in[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

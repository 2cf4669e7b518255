// Package nodelabels holds the labels of the node splitlet runs as, which
// admission's node and the Node sync registers both take from here, so a
// pod's node selector or affinity means the same to the scheduler and to
// admission.
package nodelabels

import (
	"maps"
	"runtime"

	v1 "k8s.io/api/core/v1"
)

// The deprecated beta OS and arch labels, still set by the kubelet.
const (
	betaLabelOS   = "beta.kubernetes.io/os"
	betaLabelArch = "beta.kubernetes.io/arch"
)

// AgentLabel marks a node run by splitlet (value AgentLabelValue), so pods
// can select splitlet's nodes.
const (
	AgentLabel      = "splitlet.dev/agent"
	AgentLabelValue = "splitlet"
)

// Labels returns the labels of the node whose kubernetes.io/hostname is
// hostname: the kubelet's initialNode labels (hostname, OS and arch, with
// the deprecated beta OS and arch), splitlet's AgentLabel, then configured
// (--node-labels), which win.
func Labels(hostname string, configured map[string]string) map[string]string {
	labels := map[string]string{
		v1.LabelHostname:   hostname,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
		betaLabelOS:        runtime.GOOS,
		betaLabelArch:      runtime.GOARCH,
		AgentLabel:         AgentLabelValue,
	}
	maps.Copy(labels, configured)
	return labels
}

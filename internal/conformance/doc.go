// Package conformance runs Kubernetes' own e2e suite (e2e.test of the
// version the project tracks, run by the ginkgo CLI) against one node of a
// control plane started by package cluster: a splitlet node (package stack)
// or a real kubelet of the same version (package kubeletnode), each in front
// of its own containerd. It reads the suite's JUnit report and compares two
// runs: which specs pass on the kubelet and not on splitlet.
//
// `make conformance` (hack/conformance.sh) builds what it needs, starts
// containerd inside a network namespace of its own and runs
// bin/splitlet-conformance, this package's command.
//
// Usage sketch:
//
//	res, err := conformance.Run(ctx, conformance.Config{Node: conformance.Splitlet, ...})
//	kubelet, _ := conformance.ReadJUnit("kubelet/junit_01.xml")
//	for _, name := range conformance.Regressions(kubelet, res) { ... }
package conformance

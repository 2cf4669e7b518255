// Package defaults fills in a decoded pod the way the API server's core/v1
// defaulting does (SetDefaults_Pod), and the way the kubelet completes pods
// that come from a manifest file or URL rather than from the API server
// (ApplyStaticPodDefaults: UID from a content hash, node-qualified name,
// config annotations, NoExecute toleration).
//
// Order for a static pod, as in the kubelet's file source:
//
//	defaults.SetDefaults_Pod(pod)
//	err := defaults.ApplyStaticPodDefaults(pod, defaults.Source{Kind: defaults.SourceFile, Location: path}, nodeName)
//	if errs := validation.ValidatePod(pod); len(errs) > 0 { ... start nothing ... }
//
// SetDefaults_Pod is idempotent; ApplyStaticPodDefaults is called once per
// read of a manifest. Pods from the PodService API only need SetDefaults_Pod
// (and a UID, which that API assigns).
package defaults

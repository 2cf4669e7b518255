// Package manifest decodes pod manifests (YAML or JSON, one or more
// documents per stream) into core/v1 Pods, the way the kubelet's file and
// HTTP pod sources read them and the way `kubectl apply --validate=strict`
// rejects them: unknown or duplicated fields are errors that name the field.
//
// Decoding only turns bytes into Pods. It neither defaults nor validates them:
// callers run defaults.SetDefaults_Pod (and defaults.ApplyStaticPodDefaults
// for file and URL sources) and then validation.ValidatePod, and start
// nothing for a pod that fails.
//
//	pods, err := manifest.Decode(data)
//	if err != nil {
//		return fmt.Errorf("%s: %w", path, err) // the caller adds the file name
//	}
package manifest

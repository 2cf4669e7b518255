// Package pluginhost runs the admission service's out-of-process admission
// plugins (binaries built on services/admission/plugin) and puts them in the
// admission chain.
//
// A configuration file lists the plugins in the order they are asked, each
// with its binary's path and SHA-256 checksum, a failure policy and a
// timeout. New verifies every checksum before starting anything and refuses
// a changed binary; it starts each plugin with hashicorp/go-plugin over gRPC
// with AutoMTLS and routes the plugin's stderr logs into zap. The returned
// Chain is a lifecycle.PodAdmitHandler placed after the built-in handlers:
//
//	cfg, err := pluginhost.LoadConfig("/etc/splitlet/admission-plugins.yaml")
//	...
//	plugins, err := pluginhost.New(ctx, cfg, pluginhost.Options{Logger: log, GetNode: getNode})
//	...
//	defer plugins.Close()
//	chain := lifecycle.Chain{evictionHandler, predicateHandler, plugins}
//
// A plugin that fails (error, timeout, crash) has its failure policy
// applied: Fail rejects the pod with reason AdmissionPluginError, Ignore
// admits it and logs a warning. A plugin process that exited is restarted on
// the next call, its checksum verified again, with an exponential back-off
// between restarts so that a crash-looping plugin does not fork a process
// per admission.
package pluginhost

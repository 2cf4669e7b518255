// Package validation checks a defaulted core/v1 Pod the way the API server's
// pod validation does (kubernetes pkg/apis/core/validation: ValidatePodCreate,
// ValidatePodSpec, ValidatePodUpdate), so that sync starts nothing for a
// manifest the API server would have refused, and says why with the same
// field paths and wording:
//
//	spec.containers[1].image: Required value
//	spec.initContainers[0].name: Duplicate value: "app"
//
// Validation expects a defaulted pod (defaults.SetDefaults_Pod), as the API
// server validates after defaulting: fields that defaulting always fills,
// such as terminationGracePeriodSeconds, imagePullPolicy or a port's
// protocol, are Required here.
//
// Differences from the API server, on purpose:
//   - ephemeral containers are accepted in a created pod (the API server
//     only takes them through the ephemeralcontainers subresource; a node
//     source has no such subresource);
//   - a probe or lifecycle hook that names a port (`port: http`) must name
//     one of the container's ports; the API server leaves that to the kubelet,
//     which then fails the probe at run time;
//   - probe periodSeconds, timeoutSeconds, successThreshold and
//     failureThreshold must be at least 1 (defaulting turns 0 into the
//     default, so only an undefaulted pod could fail this);
//   - terminationGracePeriodSeconds must not be negative (the API server
//     silently turns a negative value into 1);
//   - volume sources get only structural checks (exactly one source, names
//     and paths), not every plugin's field rules.
//
// Feature gates are taken at the v1.36 API server's defaults: a container's
// own restartPolicy and restartPolicyRules (ContainerRestartRules and
// RestartAllContainersOnContainerExits, both on) are validated as it
// validates them, env names and envFrom prefixes follow the relaxed rule
// (RelaxedEnvironmentVariableValidation, GA: any printable ASCII but '='),
// and spec.hostnameOverride is checked (HostnameOverride, on).
//
// Use AsError to turn a list into an error that wraps
// errdefs.ErrInvalidArgument.
package validation

package validation

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateProbesAndLifecycle checks what regular containers and sidecars
// may carry: liveness/readiness/startup probes and postStart/preStop hooks.
func validateProbesAndLifecycle(c *v1.Container, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(c.Lifecycle.PostStart), c, gracePeriod, fldPath.Child("lifecycle", "postStart"))...)
		}
		if c.Lifecycle.PreStop != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(c.Lifecycle.PreStop), c, gracePeriod, fldPath.Child("lifecycle", "preStop"))...)
		}
	}
	if p := c.LivenessProbe; p != nil {
		path := fldPath.Child("livenessProbe")
		allErrs = append(allErrs, validateProbe(p, c, gracePeriod, path)...)
		if p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	if p := c.ReadinessProbe; p != nil {
		path := fldPath.Child("readinessProbe")
		allErrs = append(allErrs, validateProbe(p, c, gracePeriod, path)...)
		if p.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if p := c.StartupProbe; p != nil {
		path := fldPath.Child("startupProbe")
		allErrs = append(allErrs, validateProbe(p, c, gracePeriod, path)...)
		if p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	return allErrs
}

// validateProbe matches validateProbe, with counts and thresholds required
// to be at least 1 (see the package comment).
func validateProbe(p *v1.Probe, c *v1.Container, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	allErrs := validateHandler(probeHandler(&p.ProbeHandler), c, gracePeriod, fldPath)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		if f.value < 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, "must be greater than or equal to 1"))
		}
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return allErrs
}

// handler is the union of probe and lifecycle handlers, as the API server's
// commonHandler.
type handler struct {
	exec      *v1.ExecAction
	httpGet   *v1.HTTPGetAction
	tcpSocket *v1.TCPSocketAction
	grpc      *v1.GRPCAction
	sleep     *v1.SleepAction
}

func probeHandler(h *v1.ProbeHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}
}

func lifecycleHandler(h *v1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

// validateHandler matches validateHandler: exactly one handler type; the
// second and later ones are Forbidden, none at all is Required.
func validateHandler(h handler, c *v1.Container, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	one := func(set bool, name string, check func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		allErrs = append(allErrs, check(fldPath.Child(name))...)
	}
	one(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if h.httpGet.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validatePortNumOrName(h.httpGet.Port, c, p.Child("port"))...)
		if h.httpGet.Scheme != v1.URISchemeHTTP && h.httpGet.Scheme != v1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(p.Child("scheme"), h.httpGet.Scheme, []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}))
		}
		for _, hdr := range h.httpGet.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
				errs = append(errs, field.Invalid(p.Child("httpHeaders"), hdr.Name, msg))
			}
		}
		return errs
	})
	one(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, c, p.Child("port"))
	})
	one(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), c, p.Child("port"))
	})
	one(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		// validateSleepAction with AllowPodLifecycleSleepActionZeroValue (GA).
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

// validatePortNumOrName matches ValidatePortNumOrName, and in addition
// requires a port given by name to be one of the container's named ports:
// the kubelet could not resolve it otherwise.
func validatePortNumOrName(port intstr.IntOrString, c *v1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		msgs := validation.IsValidPortName(port.StrVal)
		for _, msg := range msgs {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
		if len(msgs) == 0 && !hasNamedPort(c, port.StrVal) {
			allErrs = append(allErrs, field.NotFound(fldPath, port.StrVal))
		}
	default:
		allErrs = append(allErrs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return allErrs
}

func hasNamedPort(c *v1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

package validation

import (
	"net/netip"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSecurityContext checks a container's ids and seccomp profile, as
// ValidateSecurityContext does (privileged and capabilities are the node's
// policy's, policycheck).
func validateSecurityContext(sc *v1.SecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateIDs(sc.RunAsUser, sc.RunAsGroup, fldPath)...)
	allErrs = append(allErrs, validateSeccompProfileField(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	return allErrs
}

// validateIDs checks runAsUser and runAsGroup (IsValidUserID, IsValidGroupID).
func validateIDs(user, group *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if user != nil {
		for _, msg := range validation.IsValidUserID(*user) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runAsUser"), *user, msg))
		}
	}
	if group != nil {
		for _, msg := range validation.IsValidGroupID(*group) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runAsGroup"), *group, msg))
		}
	}
	return allErrs
}

// validateSeccompProfileField matches the API server's: a known type, and
// localhostProfile exactly when the type is Localhost.
func validateSeccompProfileField(sp *v1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch sp.Type {
	case v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), sp.Type,
			[]v1.SeccompProfileType{v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case sp.Type == v1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		allErrs = append(allErrs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == v1.SeccompProfileTypeLocalhost:
		allErrs = append(allErrs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), *sp.LocalhostProfile, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

// validateHostAliases matches ValidateHostAliases: an IP, and host names
// that are DNS subdomains.
func validateHostAliases(aliases []v1.HostAlias, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, a := range aliases {
		if _, err := netip.ParseAddr(a.IP); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("ip"), a.IP, "must be a valid IP address"))
		}
		for j, h := range a.Hostnames {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(h, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("hostnames").Index(j), h, msg))
			}
		}
	}
	return allErrs
}

// validatePathNoBacksteps matches the API server's for host paths.
func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

// validateUserNamespaces refuses what needs a user namespace: splitlet
// runs every pod in the node's (it has no hostUsers: false yet, which the
// kubelet has with a runtime that supports it), so such a pod is refused
// at apply rather than run with the host's users. A container's procMount
// Unmasked needs hostUsers: false, as the API server's validation says.
func validateUserNamespaces(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.HostUsers != nil && !*spec.HostUsers {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostUsers"), "user namespaces (hostUsers: false) are not supported by this node (splitlet)"))
	}
	check := func(p *field.Path, sc *v1.SecurityContext) {
		if sc == nil || sc.ProcMount == nil {
			return
		}
		switch *sc.ProcMount {
		case v1.DefaultProcMount:
		case v1.UnmaskedProcMount:
			allErrs = append(allErrs, field.Invalid(p.Child("securityContext", "procMount"), *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("securityContext", "procMount"), *sc.ProcMount,
				[]v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}))
		}
	}
	for i := range spec.InitContainers {
		check(fldPath.Child("initContainers").Index(i), spec.InitContainers[i].SecurityContext)
	}
	for i := range spec.Containers {
		check(fldPath.Child("containers").Index(i), spec.Containers[i].SecurityContext)
	}
	for i := range spec.EphemeralContainers {
		check(fldPath.Child("ephemeralContainers").Index(i), spec.EphemeralContainers[i].SecurityContext)
	}
	return allErrs
}

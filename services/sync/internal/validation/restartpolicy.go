package validation

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Container restart policies and rules as a v1.36 API server validates them
// with its default gates: ContainerRestartRules (beta since 1.35) and
// RestartAllContainersOnContainerExits (beta since 1.36) are on, so
// PodValidationOptions.AllowContainerRestartPolicyRules and
// AllowRestartAllContainers are both true for a new pod.

var (
	supportedContainerRestartPolicies = sets.New(
		v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure)
	supportedContainerRestartRuleOperators = sets.New(
		v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn)
	supportedContainerRestartRuleActions = sets.New(
		v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers)
)

const (
	maxContainerRestartRules = 20
	maxRestartRuleExitCodes  = 255
)

// validateInitContainerRestartPolicy matches the API server's
// validateInitContainerRestartPolicy with both gates on: rules need a
// container-level policy, and every policy (Always, the sidecar, included)
// is checked by validateContainerRestartPolicy.
func validateInitContainerRestartPolicy(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, fldPath *field.Path) field.ErrorList {
	if policy == nil {
		if len(rules) > 0 {
			return field.ErrorList{field.Required(fldPath.Child("restartPolicy"), "must specify restartPolicy when restart rules are used")}
		}
		return nil
	}
	return validateContainerRestartPolicy(policy, rules, fldPath)
}

// validateContainerRestartPolicy matches the API server's
// validateContainerRestartPolicy with both gates on: a known policy, which
// rules require; at most 20 rules, each with a known action and an
// exitCodes condition with a known operator and at most 255 values.
func validateContainerRestartPolicy(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	policyPath := fldPath.Child("restartPolicy")
	switch {
	case policy == nil && len(rules) == 0:
		return nil
	case policy == nil:
		allErrs = append(allErrs, field.Required(policyPath, "must specify restartPolicy when restart rules are used"))
	case !supportedContainerRestartPolicies.Has(*policy):
		allErrs = append(allErrs, field.NotSupported(policyPath, *policy, sets.List(supportedContainerRestartPolicies)))
	}
	rulesPath := fldPath.Child("restartPolicyRules")
	if len(rules) > maxContainerRestartRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxContainerRestartRules))
	}
	for i, rule := range rules {
		allErrs = append(allErrs, validateContainerRestartRule(rule, rulesPath.Index(i))...)
	}
	return allErrs
}

func validateContainerRestartRule(rule v1.ContainerRestartRule, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !supportedContainerRestartRuleActions.Has(rule.Action) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("action"), rule.Action, sets.List(supportedContainerRestartRuleActions)))
	}
	codesPath := fldPath.Child("exitCodes")
	if rule.ExitCodes == nil {
		return append(allErrs, field.Required(codesPath, "must be specified"))
	}
	if !supportedContainerRestartRuleOperators.Has(rule.ExitCodes.Operator) {
		allErrs = append(allErrs, field.NotSupported(codesPath.Child("operator"), rule.ExitCodes.Operator, sets.List(supportedContainerRestartRuleOperators)))
	}
	if n := len(rule.ExitCodes.Values); n > maxRestartRuleExitCodes {
		allErrs = append(allErrs, field.TooMany(codesPath.Child("values"), n, maxRestartRuleExitCodes))
	}
	return allErrs
}

package validation

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestValidateContainerRestartPolicy ports the API server's test of the same
// name (pkg/apis/core/validation, v1.36.3) with the options a default v1.36
// API server uses for a new pod: AllowContainerRestartPolicyRules and
// AllowRestartAllContainers both true. Its one case that needs
// AllowRestartAllContainers off (rules on a sidecar are Forbidden) cannot
// happen with the default gates and is left out. Errors compare as the
// kubelet's test compares them: type, field and bad value, not the detail.
func TestValidateContainerRestartPolicy(t *testing.T) {
	var (
		always    = v1.ContainerRestartPolicyAlways
		never     = v1.ContainerRestartPolicyNever
		onFailure = v1.ContainerRestartPolicyOnFailure
		invalid   = v1.ContainerRestartPolicy("invalid")
		empty     = v1.ContainerRestartPolicy("")
	)
	rule := func(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, values []int32) v1.ContainerRestartRule {
		return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: values}}
	}
	restart42 := rule("Restart", "In", []int32{42})
	tooManyRules := make([]v1.ContainerRestartRule, 21)
	for i := range tooManyRules {
		tooManyRules[i] = restart42
	}
	container := func(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule) v1.Container {
		return v1.Container{Name: "name", Image: "image", ImagePullPolicy: v1.PullIfNotPresent,
			TerminationMessagePolicy: v1.TerminationMessageReadFile, RestartPolicy: policy, RestartPolicyRules: rules}
	}
	for _, tc := range []struct {
		desc  string
		init  bool
		c     v1.Container
		wants field.ErrorList
	}{
		// Regular containers: the API server's successCases.
		{desc: "no-restart-policy-and-rules", c: container(nil, nil)},
		{desc: "restart-policy-always", c: container(&always, nil)},
		{desc: "restart-policy-never", c: container(&never, nil)},
		{desc: "restart-policy-on-failure", c: container(&onFailure, nil)},
		{desc: "restart-policy-rules", c: container(&never, []v1.ContainerRestartRule{restart42})},
		{desc: "restart-all-containers", c: container(&never, []v1.ContainerRestartRule{rule("RestartAllContainers", "In", []int32{42})})},
		// Regular containers: its errorCases.
		{desc: "invalid container restart policy", c: container(&invalid, nil),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "containers[0].restartPolicy", BadValue: invalid}}},
		{desc: "empty container restart policy", c: container(&empty, nil),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "containers[0].restartPolicy", BadValue: empty}}},
		{desc: "missing container restart policy when restart rules are specified", c: container(nil, []v1.ContainerRestartRule{restart42}),
			wants: field.ErrorList{{Type: field.ErrorTypeRequired, Field: "containers[0].restartPolicy", BadValue: ""}}},
		{desc: "invalid action", c: container(&never, []v1.ContainerRestartRule{rule("invalid", "In", []int32{42})}),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "containers[0].restartPolicyRules[0].action", BadValue: v1.ContainerRestartRuleAction("invalid")}}},
		{desc: "empty action", c: container(&never, []v1.ContainerRestartRule{rule("", "In", []int32{42})}),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "containers[0].restartPolicyRules[0].action", BadValue: v1.ContainerRestartRuleAction("")}}},
		{desc: "empty ExitCodes", c: container(&never, []v1.ContainerRestartRule{{Action: "Restart"}}),
			wants: field.ErrorList{{Type: field.ErrorTypeRequired, Field: "containers[0].restartPolicyRules[0].exitCodes", BadValue: ""}}},
		{desc: "invalid ExitCodes Operator", c: container(&never, []v1.ContainerRestartRule{rule("Restart", "invalid", []int32{42})}),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "containers[0].restartPolicyRules[0].exitCodes.operator", BadValue: v1.ContainerRestartRuleOnExitCodesOperator("invalid")}}},
		{desc: "empty ExitCodes Operator", c: container(&never, []v1.ContainerRestartRule{rule("Restart", "", []int32{42})}),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "containers[0].restartPolicyRules[0].exitCodes.operator", BadValue: v1.ContainerRestartRuleOnExitCodesOperator("")}}},
		{desc: "restart-policy-rules with too many exit codes", c: container(&never, []v1.ContainerRestartRule{rule("Restart", "In", make([]int32, 256))}),
			wants: field.ErrorList{{Type: field.ErrorTypeTooMany, Field: "containers[0].restartPolicyRules[0].exitCodes.values", BadValue: 256}}},
		{desc: "restart-policy-rules with too many rules", c: container(&never, tooManyRules),
			wants: field.ErrorList{{Type: field.ErrorTypeTooMany, Field: "containers[0].restartPolicyRules", BadValue: 21}}},
		// Init containers: its third table, with both options on.
		{desc: "sidecar containers without restart policy rules", init: true, c: container(&always, nil)},
		{desc: "restart policy rules are supported with restart policy Always with option", init: true,
			c: container(&always, []v1.ContainerRestartRule{rule("RestartAllContainers", "In", []int32{1})})},
		{desc: "restart policy rules are not supported if no restart policy is set", init: true,
			c:     container(nil, []v1.ContainerRestartRule{rule("RestartAllContainers", "In", []int32{1})}),
			wants: field.ErrorList{{Type: field.ErrorTypeRequired, Field: "initContainers[0].restartPolicy", BadValue: ""}}},
		// Not in its tables, but its code: a non-sidecar init container's
		// policy and rules get the regular containers' checks.
		{desc: "init container with an invalid policy", init: true, c: container(&invalid, nil),
			wants: field.ErrorList{{Type: field.ErrorTypeNotSupported, Field: "initContainers[0].restartPolicy", BadValue: invalid}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var errs field.ErrorList
			grace := int64(30)
			if tc.init {
				errs = validateInitContainers([]v1.Container{tc.c}, nil, nil, &grace, field.NewPath("initContainers"))
			} else {
				errs = validateContainers([]v1.Container{tc.c}, nil, &grace, field.NewPath("containers"))
			}
			if got, want := withoutDetail(errs), withoutDetail(tc.wants); !reflect.DeepEqual(got, want) {
				t.Errorf("errors:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// withoutDetail keeps what the API server's test compares of each error.
func withoutDetail(errs field.ErrorList) []field.Error {
	out := []field.Error{}
	for _, e := range errs {
		out = append(out, field.Error{Type: e.Type, Field: e.Field, BadValue: e.BadValue})
	}
	return out
}

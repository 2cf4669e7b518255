package printers

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// describeTimeFormat is kubectl describe's time layout (time.RFC1123Z).
const describeTimeFormat = time.RFC1123Z

// lastAppliedAnnotation is hidden from describe, as kubectl hides it.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// DescribePod writes pod and its events in the layout of kubectl's
// PodDescriber.Describe (describePod in k8s.io/kubectl/pkg/describe):
// header fields, init containers, containers, conditions, then events.
func DescribePod(out io.Writer, pod *corev1.Pod, events []*corev1.Event, now time.Time) error {
	// The same tabwriter setup as kubectl's tabbedString.
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	p := func(level int, format string, args ...any) {
		fmt.Fprintf(w, strings.Repeat("  ", level)+format, args...)
	}

	p(0, "Name:\t%s\n", pod.Name)
	p(0, "Namespace:\t%s\n", pod.Namespace)
	if pod.Spec.Priority != nil {
		p(0, "Priority:\t%d\n", *pod.Spec.Priority)
	}
	if pod.Spec.PriorityClassName != "" {
		p(0, "Priority Class Name:\t%s\n", pod.Spec.PriorityClassName)
	}
	if pod.Spec.RuntimeClassName != nil && *pod.Spec.RuntimeClassName != "" {
		p(0, "Runtime Class Name:\t%s\n", *pod.Spec.RuntimeClassName)
	}
	p(0, "Service Account:\t%s\n", pod.Spec.ServiceAccountName)
	if pod.Spec.NodeName == "" {
		p(0, "Node:\t<none>\n")
	} else {
		p(0, "Node:\t%s\n", pod.Spec.NodeName+"/"+pod.Status.HostIP)
	}
	if pod.Status.StartTime != nil {
		p(0, "Start Time:\t%s\n", pod.Status.StartTime.Time.Format(describeTimeFormat))
	}
	printMapMultiline(p, "Labels", pod.Labels, nil)
	printMapMultiline(p, "Annotations", pod.Annotations, map[string]bool{lastAppliedAnnotation: true})
	if pod.DeletionTimestamp != nil {
		p(0, "Status:\tTerminating (lasts %s)\n", Since(now, pod.DeletionTimestamp.Time))
		if pod.DeletionGracePeriodSeconds != nil {
			p(0, "Termination Grace Period:\t%ds\n", *pod.DeletionGracePeriodSeconds)
		}
	} else {
		p(0, "Status:\t%s\n", pod.Status.Phase)
	}
	if pod.Status.Reason != "" {
		p(0, "Reason:\t%s\n", pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		p(0, "Message:\t%s\n", pod.Status.Message)
	}
	p(0, "IP:\t%s\n", pod.Status.PodIP)
	if len(pod.Status.PodIPs) == 0 {
		p(0, "IPs:\t<none>\n")
	} else {
		p(0, "IPs:\n")
		for _, ip := range pod.Status.PodIPs {
			p(1, "IP:\t%s\n", ip.IP)
		}
	}
	if pod.Status.NominatedNodeName != "" {
		p(0, "NominatedNodeName:\t%s\n", pod.Status.NominatedNodeName)
	}
	if len(pod.Spec.InitContainers) > 0 {
		p(0, "Init Containers:\n")
		describeContainers(p, pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	}
	p(0, "Containers:\n")
	describeContainers(p, pod.Spec.Containers, pod.Status.ContainerStatuses)
	if len(pod.Status.Conditions) > 0 {
		p(0, "Conditions:\n")
		p(1, "Type\tStatus\n")
		for _, c := range pod.Status.Conditions {
			p(1, "%v \t%v \n", c.Type, c.Status)
		}
	}
	if pod.Status.QOSClass != "" {
		p(0, "QoS Class:\t%s\n", pod.Status.QOSClass)
	}
	printMapMultiline(p, "Node-Selectors", pod.Spec.NodeSelector, nil)
	describeTolerations(p, pod.Spec.Tolerations)
	describeEvents(p, events, now)
	return w.Flush()
}

type printfn func(level int, format string, args ...any)

// printMapMultiline matches kubectl's printLabelsMultiline: sorted k=v, one
// a line, "<none>" when empty.
func printMapMultiline(p printfn, title string, m map[string]string, skip map[string]bool) {
	var keys []string
	for k := range m {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		p(0, "%s:\t<none>\n", title)
		return
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			p(0, "%s:\t%s=%s\n", title, k, m[k])
		} else {
			p(0, "\t%s=%s\n", k, m[k])
		}
	}
}

func describeTolerations(p printfn, tols []corev1.Toleration) {
	if len(tols) == 0 {
		p(0, "Tolerations:\t<none>\n")
		return
	}
	for i, t := range tols {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		if t.Operator == corev1.TolerationOpExists && t.Value == "" {
			s += " op=Exists"
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		if i == 0 {
			p(0, "Tolerations:\t%s\n", s)
		} else {
			p(0, "\t%s\n", s)
		}
	}
}

// describeContainers follows kubectl's describeContainers: basic info, state,
// last state, readiness and restarts for every container of the spec.
func describeContainers(p printfn, containers []corev1.Container, statuses []corev1.ContainerStatus) {
	byName := make(map[string]corev1.ContainerStatus, len(statuses))
	for _, s := range statuses {
		byName[s.Name] = s
	}
	for _, c := range containers {
		st, ok := byName[c.Name]
		p(1, "%v:\n", c.Name)
		if ok {
			p(2, "Container ID:\t%s\n", st.ContainerID)
		}
		p(2, "Image:\t%s\n", c.Image)
		if ok {
			p(2, "Image ID:\t%s\n", st.ImageID)
		}
		describePorts(p, c.Ports)
		if len(c.Command) > 0 {
			p(2, "Command:\n")
			for _, s := range c.Command {
				p(3, "%s\n", s)
			}
		}
		if len(c.Args) > 0 {
			p(2, "Args:\n")
			for _, s := range c.Args {
				p(3, "%s\n", s)
			}
		}
		if ok {
			describeContainerState(p, "State", st.State)
			if st.LastTerminationState.Terminated != nil {
				describeContainerState(p, "Last State", st.LastTerminationState)
			}
			p(2, "Ready:\t%v\n", printBool(st.Ready))
			p(2, "Restart Count:\t%d\n", st.RestartCount)
		} else {
			p(2, "State:\tWaiting\n")
			p(2, "Ready:\tFalse\n")
			p(2, "Restart Count:\t0\n")
		}
		if len(c.Env) == 0 {
			p(2, "Environment:\t<none>\n")
		} else {
			p(2, "Environment:\n")
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					p(3, "%s:\t(from a source)\n", e.Name)
				} else {
					p(3, "%s:\t%s\n", e.Name, e.Value)
				}
			}
		}
		if len(c.VolumeMounts) == 0 {
			p(2, "Mounts:\t<none>\n")
		} else {
			p(2, "Mounts:\n")
			for _, m := range c.VolumeMounts {
				mode := "rw"
				if m.ReadOnly {
					mode = "ro"
				}
				p(3, "%s from %s (%s)\n", m.MountPath, m.Name, mode)
			}
		}
	}
}

func describePorts(p printfn, ports []corev1.ContainerPort) {
	if len(ports) == 0 {
		return
	}
	var ps, hs []string
	for _, port := range ports {
		proto := port.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ps = append(ps, fmt.Sprintf("%d/%s", port.ContainerPort, proto))
		hs = append(hs, fmt.Sprintf("%d/%s", port.HostPort, proto))
	}
	if len(ports) == 1 {
		p(2, "Port:\t%s\n", ps[0])
		p(2, "Host Port:\t%s\n", hs[0])
		return
	}
	p(2, "Ports:\t%s\n", strings.Join(ps, ", "))
	p(2, "Host Ports:\t%s\n", strings.Join(hs, ", "))
}

// describeContainerState matches kubectl's describeStatus.
func describeContainerState(p printfn, title string, s corev1.ContainerState) {
	switch {
	case s.Running != nil:
		p(2, "%s:\tRunning\n", title)
		p(3, "Started:\t%s\n", s.Running.StartedAt.Time.Format(describeTimeFormat))
	case s.Waiting != nil:
		p(2, "%s:\tWaiting\n", title)
		if s.Waiting.Reason != "" {
			p(3, "Reason:\t%s\n", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			p(3, "Message:\t%s\n", s.Waiting.Message)
		}
	case s.Terminated != nil:
		t := s.Terminated
		p(2, "%s:\tTerminated\n", title)
		if t.Reason != "" {
			p(3, "Reason:\t%s\n", t.Reason)
		}
		if t.Message != "" {
			p(3, "Message:\t%s\n", t.Message)
		}
		p(3, "Exit Code:\t%d\n", t.ExitCode)
		if t.Signal > 0 {
			p(3, "Signal:\t%d\n", t.Signal)
		}
		p(3, "Started:\t%s\n", t.StartedAt.Time.Format(describeTimeFormat))
		p(3, "Finished:\t%s\n", t.FinishedAt.Time.Format(describeTimeFormat))
	default:
		p(2, "%s:\tWaiting\n", title)
	}
}

func printBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// describeEvents matches kubectl's DescribeEvents: oldest first, with
// "(xN over D)" for repeated events.
func describeEvents(p printfn, events []*corev1.Event, now time.Time) {
	if len(events) == 0 {
		p(0, "Events:\t<none>\n")
		return
	}
	sorted := append([]*corev1.Event(nil), events...)
	SortEvents(sorted)
	p(0, "Events:\n")
	p(1, "Type\tReason\tAge\tFrom\tMessage\n")
	p(1, "----\t------\t----\t----\t-------\n")
	for _, e := range sorted {
		p(1, "%v\t%v\t%s\t%v\t%v\n", e.Type, e.Reason, EventInterval(e, now), EventSource(e), strings.TrimSpace(e.Message))
	}
}

// eventLastTime is when an event was last seen: lastTimestamp, else the
// series' last observed time, else eventTime.
func eventLastTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

func eventFirstTime(e *corev1.Event) time.Time {
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	return e.EventTime.Time
}

// SortEvents orders events oldest first by the time they were last seen.
func SortEvents(events []*corev1.Event) {
	sort.SliceStable(events, func(i, j int) bool {
		return eventLastTime(events[i]).Before(eventLastTime(events[j]))
	})
}

// EventInterval is describe's Age cell: "5m", or "2m (x3 over 10m)".
func EventInterval(e *corev1.Event, now time.Time) string {
	count := e.Count
	if e.Series != nil {
		count = e.Series.Count
	}
	if count > 1 {
		return fmt.Sprintf("%s (x%d over %s)", Since(eventLastTime(e), now), count, Since(eventFirstTime(e), now))
	}
	return Since(eventFirstTime(e), now)
}

// EventSource matches kubectl's formatEventSource.
func EventSource(e *corev1.Event) string {
	component := e.Source.Component
	if component == "" {
		component = e.ReportingController
	}
	if e.Source.Host != "" {
		return component + ", " + e.Source.Host
	}
	return component
}

// EventsTableHeader is `splitctl events`' header, as `kubectl events`.
func EventsTableHeader(withNamespace bool) []string {
	h := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
	if withNamespace {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

// EventCells is one row of `splitctl events`.
func EventCells(e *corev1.Event, withNamespace bool, now time.Time) []string {
	last := Since(eventLastTime(e), now)
	if count := e.Count; count > 1 || (e.Series != nil && e.Series.Count > 1) {
		if e.Series != nil {
			count = e.Series.Count
		}
		last = fmt.Sprintf("%s (x%d over %s)", last, count, Since(eventFirstTime(e), now))
	}
	obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
	c := []string{last, e.Type, e.Reason, obj, strings.TrimSpace(e.Message)}
	if withNamespace {
		c = append([]string{e.Namespace}, c...)
	}
	return c
}

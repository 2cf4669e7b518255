// Package events is sync's event recorder: the kubelet's pod events (Pulling,
// Pulled, Created, Started, Killing, BackOff, Unhealthy, ...) kept in memory
// per pod so PodService.Events can list them and PodService.Watch can follow
// them, the way `kubectl describe pod` shows a kubelet's events.
//
// Recording follows client-go's legacy recorder (tools/record): an event is
// about a Pod (or one of its containers, through the fieldPath
// `spec.containers{name}`), comes from source component "splitlet" on this
// node, is Normal or Warning, and gets a unique name `<pod>.<hex nanos>`.
// Before it is stored it goes through a correlator like client-go's
// EventCorrelator (correlate.go):
//
//   - an identical event (same pod, container, type, reason and message)
//     bumps the stored event's count and lastTimestamp instead of adding one;
//   - from the AggregateMaxEvents-th distinct message with one reason for one
//     pod within AggregateInterval on, such events fold into one event whose
//     message starts with "(combined from similar events): ";
//   - a token bucket per pod and event type (burst 25, one more every five
//     minutes) drops events from a pod that will not stop emitting them.
//
// The store is bounded (store.go): at most PerPodLimit events per pod, at most
// TotalLimit overall (the pod holding the most events gives one up first;
// past TotalLimit the store evicts down to a twentieth under it at once),
// events expire EventTTL after their last occurrence like the API server's
// --event-ttl, and Forget drops a deleted pod's events ForgetTTL later so
// they stay readable for a while after deletion.
//
// Usage sketch:
//
//	rec := events.New(ctx, events.Options{NodeName: node})
//	rec.EventfContainer(pod, "app", v1.EventTypeNormal, events.PullingImage, "Pulling image %q", image)
//	evs := rec.List(pod.Namespace, pod.Name) // oldest lastTimestamp first
//	ch := rec.Subscribe(ctx)                 // closed when ctx is done
package events

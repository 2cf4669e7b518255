// Package admission is splitlet-sync's side of splitlet-admission: Client
// implements syncloop.Admitter over the AdmissionService (gRPC through
// connect-go, cleartext HTTP/2), and Client.WatchEvictions hands the
// evictions the eviction manager decides to a syncloop.Evictor, reconnecting
// with back-off whenever the stream breaks.
//
// Usage sketch:
//
//	c := admission.New("127.0.0.1:7444", admission.Options{Timeout: 2 * time.Second})
//	k := syncloop.New(syncloop.Options{Admitter: c, ...}, ...)
//	go c.WatchEvictions(ctx, k)
//
// Admission never calls sync: sync asks (Admit) and watches (WatchEvictions).
package admission

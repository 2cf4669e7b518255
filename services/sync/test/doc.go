// Package test holds splitlet-sync's scenario tests: they build the real
// splitlet-gateway (fake backend) and splitlet-sync binaries, start them as
// processes, and drive pods through the PodService, checking the runtime's
// side with a CRI client to the gateway.
//
//	cd services/sync && go test ./test/...
package test

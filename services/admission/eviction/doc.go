// Package eviction holds the eviction manager's admission side: while the
// node is under resource pressure, new pods are turned away so they do not
// make the pressure worse. The pressure itself (signals, thresholds, grace
// periods) comes from a PressureSource; the eviction manager that observes
// the node implements it.
package eviction

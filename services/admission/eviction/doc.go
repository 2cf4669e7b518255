// Package eviction is admission's eviction manager, after the kubelet's
// pkg/kubelet/eviction. It watches node pressure signals (memory.available,
// nodefs.available, nodefs.inodesFree, imagefs.available,
// imagefs.inodesFree, pid.available), applies hard and soft thresholds with
// grace periods and minimum reclaims, reports the MemoryPressure,
// DiskPressure and PIDPressure node conditions with a pressure transition
// period, and picks one pod per cycle to evict, ranked as the kubelet ranks
// them. It never stops pods itself: evictions go out on subscriptions that
// sync watches, so admission never calls sync. Before evicting for a disk
// signal it asks sync, on another subscription (SubscribeReclaims), to
// remove dead containers and unused images, waits a bounded time for its
// ReportReclaim, observes again and evicts only if a threshold is still met
// (reclaim.go, the kubelet's reclaimNodeLevelResources).
//
// While the node is under pressure, new pods are turned away so they do not
// make it worse: AdmitHandler reads the conditions from a PressureSource,
// which the Manager implements.
//
//	thresholds, err := eviction.ParseThresholdConfig(eviction.DefaultThresholdConfig())
//	src := eviction.NewMachineSource(eviction.MachineConfig{NodeFsRoot: rootDir}, podStats)
//	m := eviction.NewManager(eviction.Config{Thresholds: thresholds}, src)
//	go m.Run(ctx, activePods, 10*time.Second)
//	admit := eviction.NewAdmitHandler(m)
//	for ev := range m.Subscribe(ctx) {
//		// send ev to sync, which stops ev.Pod with ev.GracePeriodOverride
//	}
//
// Tests script observations with ScriptedSource and inject a Clock.
package eviction

package defaults

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// hasVolumeSource reports whether any source of a VolumeSource is set. The
// API server checks this with ptr.AllPtrFieldsNil; walking the pointer
// fields by reflection keeps new sources from being forgotten here.
func hasVolumeSource(src *v1.VolumeSource) bool {
	return CountVolumeSources(src) > 0
}

// CountVolumeSources returns how many of a VolumeSource's sources are set;
// a valid volume has exactly one.
func CountVolumeSources(src *v1.VolumeSource) int {
	v := reflect.ValueOf(src).Elem()
	n := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

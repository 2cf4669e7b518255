package validation

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes matches the structural part of ValidateVolumes: names are
// non-empty DNS labels and unique, each volume has exactly one source, and
// the node-local sources have what they need. It returns the volumes that
// passed, by name, for the mount checks.
func validateVolumes(volumes []v1.Volume, fldPath *field.Path) (map[string]v1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	vols := make(map[string]v1.VolumeSource, len(volumes))
	for i := range volumes {
		vol := &volumes[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		el := validateVolumeSource(&vol.VolumeSource, idxPath)
		if vol.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(vol.Name, namePath)...)
		}
		if names.Has(vol.Name) {
			el = append(el, field.Duplicate(namePath, vol.Name))
		}
		if len(el) == 0 {
			names.Insert(vol.Name)
			vols[vol.Name] = vol.VolumeSource
		}
		allErrs = append(allErrs, el...)
	}
	return vols, allErrs
}

func validateVolumeSource(src *v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	set := setSourceFields(src)
	switch {
	case len(set) == 0:
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	case len(set) > 1:
		for _, name := range set[1:] {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
		}
		return allErrs
	}
	switch {
	case src.HostPath != nil:
		if src.HostPath.Path == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("hostPath", "path"), ""))
		}
		allErrs = append(allErrs, validatePathNoBacksteps(src.HostPath.Path, fldPath.Child("hostPath", "path"))...)
	case src.EmptyDir != nil:
		ed := src.EmptyDir
		switch ed.Medium {
		case v1.StorageMediumDefault, v1.StorageMediumMemory:
		default:
			if !isHugePages(v1.ResourceName(ed.Medium)) && ed.Medium != v1.StorageMediumHugePages {
				allErrs = append(allErrs, field.NotSupported(fldPath.Child("emptyDir", "medium"), ed.Medium,
					[]v1.StorageMedium{v1.StorageMediumDefault, v1.StorageMediumMemory, v1.StorageMediumHugePages}))
			}
		}
		if ed.SizeLimit != nil && ed.SizeLimit.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("emptyDir", "sizeLimit"), ed.SizeLimit.String(), apimachineryvalidation.IsNegativeErrorMsg))
		}
	case src.ConfigMap != nil:
		if src.ConfigMap.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("configMap", "name"), ""))
		}
	case src.Secret != nil:
		if src.Secret.SecretName == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("secret", "secretName"), ""))
		}
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case src.Image != nil:
		if src.Image.Reference == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("image", "reference"), ""))
		}
	}
	return allErrs
}

// setSourceFields returns the JSON names of the VolumeSource fields that
// are set, in declaration order. Walking the struct by reflection means a
// source added to core/v1 is counted without a change here.
func setSourceFields(src *v1.VolumeSource) []string {
	var set []string
	v := reflect.ValueOf(src).Elem()
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			set = append(set, jsonName(t.Field(i)))
		}
	}
	return set
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	if tag == "" {
		return f.Name
	}
	return tag
}

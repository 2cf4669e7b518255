// Package volume writes the files of ConfigMap, Secret, downward API and
// projected volumes into a pod's volume directory the kubelet's way: the
// AtomicWriter of pkg/volume/util. Each write goes to a new timestamped
// directory, a "..data" symlink is swapped to it with one rename, and the
// user-visible entries are symlinks through "..data", so a container
// reading the volume sees either the old or the new set of files, never a
// mix.
//
// Usage sketch:
//
//	w, _ := volume.NewAtomicWriter(dir)
//	err := w.Write(map[string]volume.FileProjection{"config.yaml": {Data: b, Mode: 0o644}})
package volume

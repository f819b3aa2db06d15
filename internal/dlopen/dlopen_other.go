//go:build !(linux && cgo)

package dlopen

import "errors"

// Global is only needed for pip-installed CUDA plugins, on Linux.
func Global(path string) error {
	return errors.New("loading NVIDIA libraries by path needs Linux and cgo")
}

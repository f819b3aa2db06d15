package geo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pnec/pnec/internal/tempfiles"
)

// auxSuffix is the name GDAL's PAM machinery gives a dataset's sidecar.
const auxSuffix = ".aux.xml"

// tempBeside reserves a unique hidden file name in the directory of path,
// so that a later os.Rename to path stays on one file system (atomic).
// The name carries pnec's marker and ends in tag, e.g.
// ".scene.tif.pnec-123456.tmp.tif" (tempfiles.IsTempOf knows it).
func tempBeside(path, tag string) (string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := tempfiles.Add(); err != nil {
		return "", fmt.Errorf("create temporary file beside %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+base+tempfiles.Marker+"*"+tag)
	if err != nil {
		return "", fmt.Errorf("create temporary file beside %s: %w", path, err)
	}
	name := f.Name()
	f.Close()
	// GDAL opens an existing file with "wb", which keeps os.CreateTemp's
	// 0600 mode: remove the placeholder so GDAL creates the file with the
	// usual mode (0666 less umask). The random name stays practically unique.
	if err := os.Remove(name); err != nil {
		return "", fmt.Errorf("create temporary file beside %s: %w", path, err)
	}
	// Recorded so that a signal's stop removes it (and its sidecars) even
	// while GDAL is still writing it.
	if err := tempfiles.Add(withSidecars(name)...); err != nil {
		return "", fmt.Errorf("create temporary file beside %s: %w", path, err)
	}
	return name, nil
}

// withSidecars is path and the sidecars GDAL may write for it: the
// .aux.xml, and the satellite metadata files (.IMD, .RPB, _RPC.TXT) that
// GTiff writes when a dataset it closed after an update carries such
// metadata, which a metadata reader may have taken from an unrelated file
// beside it (ALOS reads any summary.txt). Empty for an empty path.
func withSidecars(path string) []string {
	if path == "" {
		return nil
	}
	base := strings.TrimSuffix(path, filepath.Ext(path))
	return []string{path, path + auxSuffix, base + ".IMD", base + ".RPB", base + "_RPC.TXT"}
}

// removeIfExists removes files, ignoring ones that are not there.
func removeIfExists(paths ...string) error {
	var errs []error
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		tempfiles.Forget(p)
	}
	return errors.Join(errs...)
}

// publish renames tmp to path, then tmp's sidecar (if GDAL or we wrote one)
// to path's; a stale sidecar of an earlier file at path is removed so that it
// cannot describe the new one. The main file goes first: a crash between the
// two renames leaves a complete product whose own metadata is inside it.
//
// The renames run under tempfiles.Publish: once a signal's stop has begun
// nothing is published, and a stop waits for renames in progress.
func publish(tmp, path string) error {
	err := tempfiles.Publish(func() error { return publishNow(tmp, path) })
	if err == nil {
		tempfiles.Forget(tmp, tmp+auxSuffix)
	}
	return err
}

// publishNow does publish's renames. It runs under tempfiles' lock, so it
// must not call tempfiles (removeIfExists does).
func publishNow(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	if _, err := os.Stat(tmp + auxSuffix); err == nil {
		if err := os.Rename(tmp+auxSuffix, path+auxSuffix); err != nil {
			return fmt.Errorf("rename %s to %s: %w", tmp+auxSuffix, path+auxSuffix, err)
		}
	} else if err := os.Remove(path + auxSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale sidecar: %w", err)
	}
	return nil
}

// isVSI reports whether path names a GDAL virtual file system object.
func isVSI(path string) bool { return strings.HasPrefix(path, "/vsi") }

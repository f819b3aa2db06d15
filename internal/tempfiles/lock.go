package tempfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// ErrBusy says another process holds an output's lock (TryLock).
var ErrBusy = errors.New("another process is writing it")

// Lock is an exclusive advisory lock (flock(2)) on a product's lock file,
// held by whoever writes the product KEY.tif (and its KEY.json, KEY.qml,
// KEY.reliability.tif) in a directory: pnec batch for each scene, pnec
// classify for its output. While it is held nobody else removes the
// product's temporaries; when it is free, any left are stale (their writer
// is gone: the kernel drops a flock when its process dies, SIGKILL
// included).
type Lock struct {
	l    *flock.Flock
	path string
}

// LockPath is the lock file of product key in dir: ".KEY.pnec-lock".
func LockPath(dir, key string) string { return filepath.Join(dir, "."+key+".pnec-lock") }

// TryLock takes product key's lock in dir without waiting; ErrBusy when
// another process holds it. The lock file is recorded as a temporary, so a
// stop on a signal removes it as Release would.
func TryLock(dir, key string) (*Lock, error) {
	p := LockPath(dir, key)
	l := flock.New(p, flock.SetPermissions(0o644))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if !ok {
		l.Close()
		return nil, ErrBusy
	}
	if err := Add(p); err != nil {
		os.Remove(p)
		l.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return &Lock{l: l, path: p}, nil
}

// Release removes the lock file (while still holding the lock) and unlocks.
func (l *Lock) Release() {
	os.Remove(l.path)
	Forget(l.path)
	l.l.Close()
}

// productFiles are the endings, after KEY, of the files a product KEY.tif
// is made of; a temporary of one of them starts with ".KEY.<ending>.".
var productFiles = []string{"tif", "json", "qml", "reliability"}

// IsTempOf reports whether the file name in an output directory is a
// temporary of product key's files: ".KEY.tif.<random>.stage.tif" and
// ".KEY.tif.<random>.tmp.tif" (geo's product writer, also for
// KEY.reliability.tif), ".KEY.json.pnec-tmp-<random>" (WriteFile, also for
// KEY.qml), or "KEY.tif.tmp..." as other tools name them. The ending right
// after the key keeps "scene" from claiming the temporaries of "scene.v2".
func IsTempOf(name, key string) bool {
	for _, prefix := range []string{"." + key + ".", key + "."} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		ext, tail, ok := strings.Cut(rest, ".")
		if !ok {
			continue
		}
		known := false
		for _, e := range productFiles {
			known = known || ext == e
		}
		if !known || (prefix[0] != '.' && ext != "tif" && ext != "json") {
			continue
		}
		tail = strings.ToLower(tail)
		if strings.Contains(tail, "tmp") || (prefix[0] == '.' && strings.Contains(tail, "stage")) {
			return true
		}
	}
	return false
}

// RemoveTemps deletes product key's temporaries in dir (IsTempOf) and
// returns how many it removed. The caller holds key's lock, so they are
// stale.
func RemoveTemps(dir, key string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if IsTempOf(e.Name(), key) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

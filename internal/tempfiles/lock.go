package tempfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gofrs/flock"
)

// ErrBusy says another process holds an output's lock (TryLock).
var ErrBusy = errors.New("another process is writing it")

// ErrNotLock says a file at a lock's path is not a pnec lock file (TryLock):
// pnec's are empty regular files, and taking one would remove it.
var ErrNotLock = errors.New("exists and is not a pnec lock file (those are empty)")

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
// stop on a signal removes it as Release would. A file at the lock's path
// that is not an empty regular file (a scene named .KEY.pnec-lock, a link)
// is not pnec's and is refused with ErrNotLock, never taken and removed.
func TryLock(dir, key string) (*Lock, error) {
	p := LockPath(dir, key)
	if fi, err := os.Lstat(p); err == nil && (!fi.Mode().IsRegular() || fi.Size() != 0) {
		return nil, fmt.Errorf("lock %s: %w: move it away or write another output", p, ErrNotLock)
	}
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
// is made of; a temporary of one of them starts with ".KEY.<ending>.pnec-".
var productFiles = []string{"tif", "json", "qml", "reliability.tif", "probabilities.tif"}

// Marker starts the part of a temporary's name that says it is pnec's:
// ".KEY.tif" + Marker + "<random>.stage.tif" (geo's product writer) and
// ".KEY.json" + TempSuffix + "<random>" (WriteFile).
const Marker = ".pnec-"

// IsTempOf reports whether the file name in an output directory is a
// temporary of product key's files: ".KEY.tif.pnec-<random>.stage.tif" and
// ".KEY.tif.pnec-<random>.tmp.tif" (geo's product writer, also for
// KEY.reliability.tif), ".KEY.json.pnec-tmp-<random>" (WriteFile, also for
// KEY.qml), and their sidecars. The ending right after the key keeps
// "scene" from claiming the temporaries of "scene.v2"; names without pnec's
// marker are other tools' (or the user's) and never match.
func IsTempOf(name, key string) bool {
	rest, ok := strings.CutPrefix(name, "."+key+".")
	if !ok {
		return false
	}
	ext, tail, ok := strings.Cut(rest, Marker)
	if !ok || !slices.Contains(productFiles, ext) {
		return false
	}
	tail = strings.ToLower(tail)
	return strings.Contains(tail, "tmp") || strings.Contains(tail, "stage")
}

// RemoveTemps deletes product key's temporaries in dir (IsTempOf) and
// returns how many it removed. The caller holds key's lock, so they are
// stale. A file that keep reports (an input of the run: a scene named like
// a temporary, through any name or link) is never removed; keep may be nil.
// It lists dir once; a caller doing many products of one folder lists it
// once for all of them (List).
func RemoveTemps(dir, key string, keep func(path string) bool) (int, error) {
	l, err := List(dir)
	if err != nil {
		return 0, err
	}
	return l.Remove(key, keep)
}

// Listing is the temporaries a directory held when it was listed (List),
// by the product keys they belong to, so that a batch of n scenes reads
// its output folder once rather than once per scene: read per scene, the
// folder of n products made the run O(n^2) (a rerun of 1,000 up-to-date
// scenes spent 69% of its CPU in that listing). Temporaries made
// after the listing are not in it: a writer that died after it was taken
// leaves them to the next listing (a batch lists again at its end). Safe
// for concurrent use.
type Listing struct {
	dir    string
	mu     sync.Mutex
	byKeys map[string][]string // product key -> names of its temporaries
}

// lists counts List's reads of a directory (Lists).
var lists atomic.Int64

// Lists is how many directories List has read in this process, so that a
// test can hold a batch to a fixed number of reads of its output folder
// whatever its number of scenes (a count, where a timing would be noisy).
func Lists() int64 { return lists.Load() }

// List reads dir once and indexes the names that are temporaries of some
// product key (IsTempOf): for every ".<ending>.pnec-" in a name, with
// <ending> one of a product's files, the key is what precedes it.
func List(dir string) (*Listing, error) {
	lists.Add(1)
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	// Names only, unsorted: os.ReadDir's sort of a folder of 50,000
	// products cost more than the read itself.
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	l := &Listing{dir: dir, byKeys: map[string][]string{}}
	for _, name := range names {
		if !strings.HasPrefix(name, ".") || !strings.Contains(name, Marker) {
			continue
		}
		for _, ext := range productFiles {
			sep := "." + ext + Marker
			for from := 1; ; {
				i := strings.Index(name[from:], sep)
				if i < 0 {
					break
				}
				key := name[1 : from+i]
				if IsTempOf(name, key) && !slices.Contains(l.byKeys[key], name) {
					l.byKeys[key] = append(l.byKeys[key], name)
				}
				from += i + 1
			}
		}
	}
	return l, nil
}

// Has reports whether the listing holds a temporary of product key.
func (l *Listing) Has(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byKeys[key]) > 0
}

// Remove deletes the listed temporaries of product key (see RemoveTemps;
// the caller holds key's lock) and returns how many it removed; those it
// removed leave the listing.
func (l *Listing) Remove(key string, keep func(path string) bool) (int, error) {
	l.mu.Lock()
	names := l.byKeys[key]
	delete(l.byKeys, key)
	l.mu.Unlock()
	n := 0
	for i, name := range names {
		p := filepath.Join(l.dir, name)
		if keep != nil && keep(p) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			l.mu.Lock()
			l.byKeys[key] = append(l.byKeys[key], names[i:]...)
			l.mu.Unlock()
			return n, err
		}
		n++
	}
	return n, nil
}

package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/tempfiles"
)

// SourceRecord identifies the input a product was made from. A local file
// is identified by its size and modification time; a remote or virtual
// dataset (/vsicurl/, /vsis3/, ...) by its name and, when it came from a STAC
// Item, the Item's "updated" time.
type SourceRecord struct {
	Name        string `json:"name"`
	SizeBytes   int64  `json:"size_bytes,omitempty"`
	ModTime     string `json:"mtime,omitempty"` // RFC 3339 with nanoseconds, UTC
	ItemUpdated string `json:"item_updated,omitempty"`
}

func sourceRecord(in Input) SourceRecord {
	r := SourceRecord{Name: in.Name, ItemUpdated: in.ItemUpdated}
	if st, err := os.Stat(in.Name); err == nil && st.Mode().IsRegular() {
		if abs, err := filepath.Abs(in.Name); err == nil {
			r.Name = abs // the same file named from another working directory is the same input
		}
		r.SizeBytes = st.Size()
		r.ModTime = st.ModTime().UTC().Format(time.RFC3339Nano)
	}
	return r
}

// Properties of the STAC Item that record how its product was made.
const (
	propSource        = "pnec:source"
	propModelChecksum = "pnec:model_checksum"
	propProductBytes  = "pnec:product_size_bytes"
	propProductFormat = "pnec:product_format"
)

// productFormat is the layout of the products this pnec writes, recorded in
// each Item: 2 since issue 12 (no-data shared by both bands inside the TIFF,
// QGIS style, Float32 reliability as a second file), 3 since issue 21 (the
// drift figures and verdict in the product and the Item). A product of
// another format is redone.
const productFormat = 3

// upToDate reports whether the product and its Item exist, the Item says the
// product was made from src by the model with checksum in this pnec's
// product format, the product file has the size the Item recorded, and its
// companions are there (the QGIS style; the Float32 reliability file when
// floatRel). The product and Item each appear only by a
// rename of a complete file, and the Item is written after the product, so a
// matching pair is complete; a kill between the two renames leaves a product
// without (or with an older) Item, and the scene is redone.
func upToDate(productPath, itemPath string, src SourceRecord, checksum string, floatRel bool) (bool, string) {
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return false, "no STAC item"
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return false, "unreadable STAC item"
	}
	var got SourceRecord
	var gotSum string
	var gotSize int64
	if json.Unmarshal(doc.Properties[propSource], &got) != nil ||
		json.Unmarshal(doc.Properties[propModelChecksum], &gotSum) != nil ||
		json.Unmarshal(doc.Properties[propProductBytes], &gotSize) != nil {
		return false, "STAC item has no pnec record"
	}
	if got != src {
		return false, "input changed"
	}
	if gotSum != checksum {
		return false, "model changed"
	}
	var gotFormat int
	if json.Unmarshal(doc.Properties[propProductFormat], &gotFormat) != nil || gotFormat != productFormat {
		return false, "product format changed"
	}
	st, err := os.Stat(productPath)
	if err != nil {
		return false, "no product"
	}
	if st.Size() != gotSize {
		return false, "product size differs from the record"
	}
	if _, err := os.Stat(geo.StylePath(productPath)); err != nil {
		return false, "no QGIS style"
	}
	if floatRel {
		if _, err := os.Stat(geo.ReliabilityPath(productPath)); err != nil {
			return false, "no Float32 reliability file"
		}
	}
	return true, ""
}

// sceneLock is an exclusive advisory lock (flock) on a scene's lock file.
type sceneLock struct {
	l    *flock.Flock
	path string
}

// errBusy says another process holds a scene's lock.
var errBusy = errors.New("scene is being processed by another process")

func lockPath(outDir, key string) string { return filepath.Join(outDir, "."+key+".pnec-lock") }

// tryLock takes the scene's lock without waiting.
func tryLock(outDir, key string) (*sceneLock, error) {
	p := lockPath(outDir, key)
	l := flock.New(p, flock.SetPermissions(0o644))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if !ok {
		l.Close()
		return nil, errBusy
	}
	// A signal's stop removes the lock file as release would (the lock is
	// ours until the process exits).
	if err := tempfiles.Add(p); err != nil {
		os.Remove(p)
		l.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return &sceneLock{l: l, path: p}, nil
}

// release removes the lock file (while still holding the lock) and unlocks.
func (l *sceneLock) release() {
	os.Remove(l.path)
	tempfiles.Forget(l.path)
	l.l.Close()
}

// isTempOf reports whether the file name in an output directory is a
// temporary file of scene key's product (KEY.tif, its sidecar) or Item
// (KEY.json): ".KEY.tif.<random>.stage.tif" and ".KEY.tif.<random>.tmp.tif"
// (geo's product writer), ".KEY.json.pnec-tmp-<random>" (writeFileAtomic),
// or "KEY.tif.tmp..." as other tools name them. The file extension right
// after the key keeps "scene" from claiming the temporaries of "scene.v2".
func isTempOf(name, key string) bool {
	for _, prefix := range []string{"." + key + ".", key + "."} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		ext, tail, ok := strings.Cut(rest, ".")
		if !ok || (ext != "tif" && ext != "json") {
			continue
		}
		tail = strings.ToLower(tail)
		if strings.Contains(tail, "tmp") || (prefix[0] == '.' && strings.Contains(tail, "stage")) {
			return true
		}
	}
	return false
}

// removeTemps deletes key's temporary files in outDir; the caller holds key's lock.
func removeTemps(outDir, key string) (int, error) {
	ents, err := os.ReadDir(outDir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if isTempOf(e.Name(), key) {
			if err := os.RemoveAll(filepath.Join(outDir, e.Name())); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// writeFileAtomic writes data to a temporary file beside path (named as
// isTempOf recognises), syncs it and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	if err := tempfiles.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

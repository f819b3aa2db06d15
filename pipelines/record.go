package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/processor"
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
	// Mask is the area of interest the product was made within (maskRecord).
	Mask          string `json:"mask,omitempty"`
	MaskSizeBytes int64  `json:"mask_size_bytes,omitempty"`
	MaskModTime   string `json:"mask_mtime,omitempty"`
	// QualityMasks are the quality masks whose flagged pixels were made
	// no-data (qualityMaskRecord): "product" and each mask raster with its
	// bands, size and modification time; a change redoes the scene.
	QualityMasks string `json:"quality_masks,omitempty"`
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

// qualityMaskRecord records in r the quality masks of opts (product
// masks, mask rasters) as the product is made with them; each raster is
// named by href (the Items' portable names) and, when it is a local file,
// identified by its size and modification time like the scene.
func qualityMaskRecord(r *SourceRecord, opts processor.Options, href func(string) string) {
	var parts []string
	if opts.ProductQualityMasks {
		parts = append(parts, "product")
	}
	for _, m := range opts.QualityMasks {
		part := href(m.Path)
		if len(m.Bands) > 0 {
			bands := make([]string, len(m.Bands))
			for i, b := range m.Bands {
				bands[i] = strconv.Itoa(b + 1)
			}
			part += ":" + strings.Join(bands, ",")
		}
		if st, err := os.Stat(m.Path); err == nil && st.Mode().IsRegular() {
			part += fmt.Sprintf(" (%d bytes, %s)", st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano))
		}
		parts = append(parts, part)
	}
	r.QualityMasks = strings.Join(parts, "; ")
}

// Properties of the STAC Item that record how its product was made.
const (
	propSource        = "pnec:source"
	propModelChecksum = "pnec:model_checksum"
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
		Assets     map[string]struct {
			Size *int64 `json:"file:size"`
		} `json:"assets"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return false, "unreadable STAC item"
	}
	var got SourceRecord
	var gotSum string
	// The product's size is its asset's file:size (the file extension;
	// Items of pnec before issue 24 had it as pnec:product_size_bytes and
	// are redone).
	size := doc.Assets[productAssetKey].Size
	if json.Unmarshal(doc.Properties[propSource], &got) != nil ||
		json.Unmarshal(doc.Properties[propModelChecksum], &gotSum) != nil || size == nil {
		return false, "STAC item has no pnec record"
	}
	gotSize := *size
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

// errBusy is a scene's reason when another process holds its lock.
var errBusy = errors.New("scene is being processed by another process")

// writeFileAtomic writes data to a temporary file beside path (named as
// isTempOf recognises), syncs it and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	if err := tempfiles.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

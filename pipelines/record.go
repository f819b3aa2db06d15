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
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// sourceRecord is what the Item records of the input in.
func sourceRecord(in Input) stac.SourceRecord {
	r := stac.SourceRecord{Name: in.Name, ItemUpdated: in.ItemUpdated}
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
func qualityMaskRecord(r *stac.SourceRecord, opts processor.Options, href func(string) string) {
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

// upToDate reports whether the product and its Item exist, the Item says the
// product was made from src by the model with checksum in this pnec's
// product format, the product file has the size the Item recorded, and its
// companions are there (the QGIS style; the Float32 reliability file when
// floatRel). The product and Item each appear only by a
// rename of a complete file, and the Item is written after the product, so a
// matching pair is complete; a kill between the two renames leaves a product
// without (or with an older) Item, and the scene is redone.
func upToDate(productPath, itemPath string, src stac.SourceRecord, checksum string, floatRel bool) (bool, string) {
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
	var got stac.SourceRecord
	var gotSum string
	// The product's size is its asset's file:size (the file extension;
	// Items of an older pnec had it as pnec:product_size_bytes and are
	// redone).
	size := doc.Assets[stac.ProductAssetKey].Size
	if json.Unmarshal(doc.Properties[stac.PropSource], &got) != nil ||
		json.Unmarshal(doc.Properties[stac.PropModelChecksum], &gotSum) != nil || size == nil {
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
	if json.Unmarshal(doc.Properties[stac.PropProductFormat], &gotFormat) != nil || gotFormat != stac.ProductFormat {
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

// thumbnailUpToDate reports whether the Item lists the product's thumbnail
// and the file is there: a product made with --no-thumbnail, or by a pnec
// before thumbnails, is redone when one is asked for.
func thumbnailUpToDate(itemPath, productPath string) (bool, string) {
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return false, "no STAC item"
	}
	var doc struct {
		Assets map[string]json.RawMessage `json:"assets"`
	}
	if json.Unmarshal(b, &doc) != nil || doc.Assets[stac.ThumbnailAssetKey] == nil {
		return false, "STAC item has no thumbnail"
	}
	if _, err := os.Stat(geo.ThumbnailPath(productPath)); err != nil {
		return false, "no thumbnail"
	}
	return true, ""
}

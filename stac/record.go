package stac

import (
	"encoding/json"
	"fmt"

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
	// Mask is the area of interest the product was made within (maskRecord).
	Mask          string `json:"mask,omitempty"`
	MaskSizeBytes int64  `json:"mask_size_bytes,omitempty"`
	MaskModTime   string `json:"mask_mtime,omitempty"`
	// QualityMasks are the quality masks whose flagged pixels were made
	// no-data (qualityMaskRecord): "product" and each mask raster with its
	// bands, size and modification time; a change redoes the scene.
	QualityMasks string `json:"quality_masks,omitempty"`
}

// Properties of the STAC Item that record how its product was made.
const (
	PropSource        = "pnec:source"
	PropModelChecksum = "pnec:model_checksum"
	PropProductFormat = "pnec:product_format"
)

// ProductFormat is the layout of the products this pnec writes, recorded in
// each Item: 2 added no-data shared by both bands inside the TIFF, the QGIS
// style and the Float32 reliability as a second file, 3 the drift figures
// and verdict in the product and the Item. A product of
// another format is redone.
const ProductFormat = 3

// writeFileAtomic writes data to path with pnec's one atomic write
// (tempfiles.WriteFile, mode 0644), its error naming the file: "write
// PATH: cause", as every document stac writes words it.
func writeFileAtomic(path string, data []byte) error {
	if err := tempfiles.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v (an Item, a Collection) as indented JSON ending in a
// newline to path atomically: a reader sees the old file or the new one.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

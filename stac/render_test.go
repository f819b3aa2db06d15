package stac

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/stacschema"
)

// TestRenders: the class map's render draws band 1 of the product in the
// classes' colour hints (opaque, no-data the bands' value, nearest), the
// reliability's band 2 in percent, or the Float32 file 0..1.
func TestRenders(t *testing.T) {
	classes := sampleParams(t.TempDir()).Classes
	for _, tc := range []struct {
		name     string
		floatRel bool
		relAsset string
		rescale  [2]float64
	}{
		{"byte", false, ProductAssetKey, [2]float64{0, 100}},
		{"float32", true, reliabilityAssetKey, [2]float64{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Renders(classes, 255, tc.floatRel)
			c := r[RenderClasses]
			if !slices.Equal(c.Assets, []string{ProductAssetKey}) || !slices.Equal(c.Bidx, []int{1}) || c.Nodata != 255 || c.Resampling != "nearest" {
				t.Errorf("class render %+v", c)
			}
			for _, cl := range classes {
				m := c.Colormap[strconv.Itoa(cl.Value)]
				if got := strings.ToUpper(hex3(m)); got != cl.ColorHint || m[3] != 255 {
					t.Errorf("class %d: colormap %v, color_hint %s", cl.Value, m, cl.ColorHint)
				}
			}
			rel := r[RenderReliability]
			if !slices.Equal(rel.Assets, []string{tc.relAsset}) || len(rel.Rescale) != 1 || rel.Rescale[0] != tc.rescale {
				t.Errorf("reliability render %+v, want asset %s rescaled %v", rel, tc.relAsset, tc.rescale)
			}
		})
	}
}

func hex3(c [4]int) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, v := range c[:3] {
		s = append(s, digits[v>>4], digits[v&15])
	}
	return string(s)
}

// TestItemThumbnailAsset: with Thumbnail the Item lists the thumbnail
// (PNG, role thumbnail, relative href beside the product, file checksum)
// and validates, render extension included.
func TestItemThumbnailAsset(t *testing.T) {
	dir := t.TempDir()
	p := sampleParams(dir)
	p.Thumbnail = true
	p.Files[ThumbnailAssetKey] = FileInfo{Checksum: "1220" + strings.Repeat("12", 32), Size: 321}
	item, err := BuildItem(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(item)
	if err != nil {
		t.Fatal(err)
	}
	stacschema.ValidateItem(t, b, ClassificationSchema, ProjectionSchema, ProcessingSchema, RasterSchema, RenderSchema)
	var m struct {
		Assets map[string]map[string]any
	}
	json.Unmarshal(b, &m)
	a := m.Assets[ThumbnailAssetKey]
	if a["href"] != "salinas.thumbnail.png" || a["type"] != "image/png" || a["file:checksum"] == nil ||
		len(a["roles"].([]any)) != 1 || a["roles"].([]any)[0] != "thumbnail" {
		t.Errorf("thumbnail asset %v", a)
	}
	if filepath.Base(p.ProductPath) != "salinas.tif" {
		t.Fatal("sample product moved")
	}
}

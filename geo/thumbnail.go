package geo

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/airbusgeo/godal"
)

// ThumbnailMaxSide is the longest side of a product's thumbnail, pixels.
const ThumbnailMaxSide = 512

// ThumbnailMediaType is the thumbnail's media type.
const ThumbnailMediaType = "image/png"

// ThumbnailPath is where a product at path keeps its thumbnail:
// KEY.tif -> KEY.thumbnail.png.
func ThumbnailPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".thumbnail.png"
}

// ThumbnailSize is the size of the thumbnail of a cols x rows product: the
// product's own when its long side is at most max, else scaled down to a
// long side of max (each side at least 1).
func ThumbnailSize(cols, rows, max int) (int, int) {
	long := cols
	if rows > long {
		long = rows
	}
	if long <= max {
		return cols, rows
	}
	w := (cols*max + long/2) / long
	h := (rows*max + long/2) / long
	return w1(w), w1(h)
}

func w1(v int) int {
	if v < 1 {
		return 1
	}
	return v
}

// thumbnailSize is the size the thumbnail of band is read at: the band's
// own when it fits ThumbnailMaxSide, else scaled down to it; GDAL then
// reads the COG's overview nearest that resolution (nearest neighbour: the
// class overviews are MODE, so each pixel is a class the map has there).
func thumbnailSize(band godal.Band) (w, h int, scaled bool) {
	st := band.Structure()
	w, h = ThumbnailSize(st.SizeX, st.SizeY, ThumbnailMaxSide)
	return w, h, w != st.SizeX || h != st.SizeY
}

// Thumbnail renders band 1 (the class) of the product at path as a PNG
// in the product's own colour table: each pixel the RGBA of its class's
// entry, the no-data value transparent, whatever its entry says. It reads
// an overview of the COG (thumbnailSize), so its cost hardly grows with
// the product.
func Thumbnail(path string) ([]byte, error) {
	ds, err := godal.Open(path, godal.RasterOnly(), errh)
	if err != nil {
		return nil, fmt.Errorf("thumbnail of %s: %w", path, tidy(err))
	}
	defer ds.Close(errh)
	bands := ds.Bands()
	if len(bands) == 0 {
		return nil, fmt.Errorf("thumbnail of %s: no band", path)
	}
	cls := bands[0]
	ct := cls.ColorTable()
	if len(ct.Entries) == 0 {
		return nil, fmt.Errorf("thumbnail of %s: band 1 has no colour table", path)
	}
	nodata, hasND := cls.NoData()
	w, h, scaled := thumbnailSize(cls)
	buf := make([]uint16, w*h)
	opts := []godal.BandIOOption{errh}
	if scaled {
		full := cls.Structure()
		opts = append(opts, godal.Window(full.SizeX, full.SizeY))
	}
	if err := cls.Read(0, 0, buf, w, h, opts...); err != nil {
		return nil, fmt.Errorf("thumbnail of %s: read band 1: %w", path, tidy(err))
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i, v := range buf {
		if (hasND && float64(v) == nodata) || int(v) >= len(ct.Entries) {
			continue // transparent
		}
		e := ct.Entries[v]
		img.Set(i%w, i/w, color.NRGBA{R: uint8(e[0]), G: uint8(e[1]), B: uint8(e[2]), A: uint8(e[3])})
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, img); err != nil {
		return nil, fmt.Errorf("thumbnail of %s: %w", path, err)
	}
	return out.Bytes(), nil
}

// writeThumbnail writes the thumbnail of the product staged at cog to a
// temporary beside the product at path and returns its name.
func (p *ProductWriter) writeThumbnail(cog string) (string, error) {
	b, err := Thumbnail(cog)
	if err != nil {
		return "", err
	}
	tmp, err := tempBeside(p.path, ".png.tmp")
	if err != nil {
		return "", err
	}
	p.temps = append(p.temps, tmp)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", fmt.Errorf("write thumbnail: %w", err)
	}
	return tmp, nil
}

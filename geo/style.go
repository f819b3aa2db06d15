package geo

import (
	"bytes"
	"encoding/xml"
	"fmt"
)

// StyleMediaType is the media type of the QGIS style (.qml) written beside a product.
const StyleMediaType = "application/xml"

// qgisStyle is a QGIS layer style (.qml) for a product: band 1 drawn with
// the paletted renderer, one entry per class with its colour and name, and
// the shared no-data value transparent. QGIS loads KEY.qml with KEY.tif by
// default; without it, a two-band raster opens as a multiband colour image.
// The elements are those QGIS 3.22 writes for a paletted raster layer.
func qgisStyle(classes []ClassInfo, nodata int) []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>\n")
	b.WriteString(`<qgis version="3.22.16" styleCategories="Symbology">` + "\n")
	b.WriteString("  <pipe>\n")
	b.WriteString(`    <rasterrenderer type="paletted" band="1" opacity="1" alphaBand="-1" nodataColor="">` + "\n")
	b.WriteString("      <rasterTransparency>\n        <singleValuePixelList>\n")
	fmt.Fprintf(&b, `          <pixelListEntry min="%d" max="%d" percentTransparent="100"/>`+"\n", nodata, nodata)
	b.WriteString("        </singleValuePixelList>\n      </rasterTransparency>\n")
	b.WriteString("      <colorPalette>\n")
	for _, c := range classes {
		fmt.Fprintf(&b, `        <paletteEntry value="%d" color="#%02x%02x%02x" alpha="255" label="%s"/>`+"\n",
			c.Value, c.Color[0], c.Color[1], c.Color[2], xmlAttr(c.Name))
	}
	b.WriteString("      </colorPalette>\n")
	b.WriteString("    </rasterrenderer>\n")
	b.WriteString(`    <brightnesscontrast brightness="0" contrast="0" gamma="1"/>` + "\n")
	b.WriteString(`    <huesaturation saturation="0" grayscaleMode="0" colorizeOn="0" colorizeRed="255" colorizeGreen="128" colorizeBlue="128" colorizeStrength="100"/>` + "\n")
	b.WriteString(`    <rasterresampler maxOversampling="2"/>` + "\n")
	b.WriteString("  </pipe>\n")
	b.WriteString("  <blendMode>0</blendMode>\n")
	b.WriteString("</qgis>\n")
	return b.Bytes()
}

// xmlAttr escapes s for an XML attribute value.
func xmlAttr(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

package geo

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// The products of imaging spectrometers as their providers deliver them.
// GDAL 3.6 reads some as they are (ENVI cubes, GeoTIFFs) but not what
// makes them a scene: the band set, gains, bad bands and masks are in the
// providers' own metadata (an XML document, an ENVI header beside a
// GeoTIFF). Others it cannot read as a raster at all (a cube in sensor
// geometry with its geometry lookup table, HDF-EOS5 swaths and grids):
// those are read through GDAL's multidimensional API (mdim.go, Cube). The
// readers of each sensor live in package sensors, which reaches Open
// through ProductHooks (sensorkit.go); docs/sensors.md describes each.
// geo reads itself only what is no sensor's: an ENVI header beside a
// local GeoTIFF.

const maxSidecarBytes = 16 << 20

// openProduct opens name as a delivery a registered sensor's reader
// recognises (package sensors, through ProductHooks.Open); ok is false
// when none does (the caller opens it through GDAL).
func openProduct(name string) (s *Scene, ok bool, err error) {
	if o := hooks().Open; o != nil {
		return o(name)
	}
	return nil, false, nil
}

// readSidecars completes in from what GDAL does not read of a raster: an
// ENVI header beside a local GeoTIFF (band set, gains, offsets, no-data),
// then package sensors' readers (ProductHooks.Describe), which name the
// product and may ask for the header of a remote one
// (ReadENVIHeaderBeside).
func (s *Scene) readSidecars(in *Info) error {
	if in.Driver == "GTiff" && !remotePath(s.name) {
		if err := readENVIHeaderBeside(in); err != nil {
			return err
		}
		s.takeGains(in)
	}
	return s.describeDelivery(in)
}

// readENVIHeaderBeside applies the ENVI header beside the raster in.Name
// (its name with .hdr or .HDR for the extension), when there is one that
// is an ENVI header, to in (see applyENVIHeader).
func readENVIHeaderBeside(in *Info) error {
	hdr := strings.TrimSuffix(in.Name, path.Ext(in.Name))
	for _, ext := range []string{".hdr", ".HDR"} {
		if !vsiExists(hdr + ext) {
			continue
		}
		text, err := vsiReadFile(hdr+ext, maxSidecarBytes)
		if err != nil {
			return err
		}
		h, err := parseENVIHeader(string(text))
		if errors.Is(err, errNotENVIHeader) {
			return nil // another program's .hdr: not ours to read
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path.Base(hdr+ext), err)
		}
		return applyENVIHeader(in, h, path.Base(hdr+ext))
	}
	return nil
}

// takeGains makes reads apply the scale, offset and no-data in holds per
// band, after a header or a sensor's reader set them in in.
func (s *Scene) takeGains(in *Info) {
	for i := range len(s.scale) {
		s.setBandScale(in, i, in.Scale[i], in.Offset[i])
		s.nodata[i], s.hasNoData[i] = float32(in.NoData[i]), in.HasNoData[i]
	}
}

// remotePath reports whether a dataset name is on a network or custom
// GDAL file system (anything under /vsi but archives of local files),
// where probing for a sidecar costs requests: pnec then looks for an ENVI
// header beside a GeoTIFF only when a sensor's reader asks for it
// (ReadENVIHeaderBeside).
func remotePath(name string) bool {
	if !strings.HasPrefix(name, "/vsi") {
		return false
	}
	for _, local := range []string{"/vsizip/", "/vsitar/", "/vsigzip/", "/vsimem/"} {
		if strings.HasPrefix(name, local) && !strings.Contains(name[len(local):], "/vsi") {
			return false
		}
	}
	return true
}

// applyENVIHeader sets what an ENVI header beside a GeoTIFF says and the
// GeoTIFF does not: band centres and widths, bad bands, gains and offsets
// (when the TIFF has no scale of its own), no-data, band names and the
// reflectance scale factor. Its size must be the raster's.
func applyENVIHeader(in *Info, h enviHeader, label string) error {
	for key, want := range map[string]int{"samples": in.Cols, "lines": in.Rows, "bands": in.Bands} {
		if v, ok := h.int(key); ok && v != want {
			return fmt.Errorf("%s says %s = %d, the GeoTIFF has %d", label, key, v, want)
		}
	}
	n := in.Bands
	unit := h["wavelength units"]
	if in.WavelengthsNM == nil {
		wl, err := h.perBand("wavelength", n)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if err := checkCentres(wl, label+"'s wavelength list"); err != nil {
			return err
		}
		if wl != nil {
			in.WavelengthsNM, in.WavelengthUnits, in.SpectralSource = toNM(wl, unit), unit, "ENVI header beside the GeoTIFF"
		}
	}
	if in.FWHMNM == nil {
		fw, err := h.perBand("fwhm", n)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if err := checkWidths(fw, label+"'s fwhm list"); err != nil {
			return err
		}
		if fw != nil {
			in.FWHMNM = widthsNM(fw, unit, in.WavelengthsNM)
		}
	}
	if in.BadBands == nil {
		bbl, err := h.perBand("bbl", n)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		in.BadBands = badFromBBL(bbl)
	}
	gains, err := h.perBand("data gain values", n)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	offsets, err := h.perBand("data offset values", n)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	if err := checkGains(gains, "data gain value", label); err != nil {
		return err
	}
	if err := checkFinite(offsets, "data offset value", label); err != nil {
		return err
	}
	if (gains != nil || offsets != nil) && in.IdentityGains() {
		for i := range n {
			g, o := 1.0, 0.0
			if gains != nil {
				g = gains[i]
			}
			if offsets != nil {
				o = offsets[i]
			}
			in.Scale[i], in.Offset[i] = g, o
		}
	}
	if v, ok := h.number("data ignore value"); ok {
		for i := range n {
			if !in.HasNoData[i] {
				in.NoData[i], in.HasNoData[i] = v, true
			}
		}
	}
	if names := h.strings("band names"); len(names) == n {
		for i, nm := range names {
			if in.BandNames[i] == "" {
				in.BandNames[i] = nm
			}
		}
	}
	if v, ok := h["reflectance scale factor"]; ok {
		f, err := parseReflectanceScale(strings.Trim(strings.TrimSpace(v), "{}"), label)
		if err != nil {
			return err
		}
		if !in.Radiometry.Known() {
			in.Radiometry = reflectanceAfterGain(f, in.Scale, in.Offset)
		}
	}
	return nil
}

// setBandScale makes reads apply scale and offset to band i's samples.
func (s *Scene) setBandScale(in *Info, i int, scale, offset float64) {
	in.Scale[i], in.Offset[i] = scale, offset
	s.scale[i], s.offset[i] = float32(scale), float32(offset)
}

// IdentityGains reports whether every band has scale 1 and offset 0: reads
// change no sample.
func (in Info) IdentityGains() bool {
	for i := range in.Scale {
		if in.Scale[i] != 1 || (i < len(in.Offset) && in.Offset[i] != 0) {
			return false
		}
	}
	return true
}

// IsDelivery reports whether path (a local folder or file) is a product
// delivery that Open reads as one scene although it is not one raster
// file (a folder or ZIP of a sensor's files, as a registered sensor's
// reader says through ProductHooks.Delivery). A batch takes such a folder
// as one scene instead of the rasters inside it.
func IsDelivery(path string) bool {
	d := hooks().Delivery
	return d != nil && d(path)
}

// IsCompanion reports whether the file name is a companion of another
// scene in its delivery (as a registered sensor's reader says through
// ProductHooks.Companion): a batch given the folder does not take it as a
// scene of its own.
func IsCompanion(name string) bool {
	base := path.Base(name)
	c := hooks().Companion
	return c != nil && c(base)
}

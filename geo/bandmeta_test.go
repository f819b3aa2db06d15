package geo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// TestInvalidBandMetadataRefused: a scene whose band metadata holds an
// invalid value (a wavelength that is nan, inf or negative, an ENVI list
// whose "{" is never closed, a negative FWHM, a gain of 0, a reflectance
// scale factor of 0, -10000 or nan) is refused with one line naming the
// band or the key (ErrBandMetadata), instead of being read as a scene
// without wavelengths or without a scale.
func TestInvalidBandMetadataRefused(t *testing.T) {
	const good = "wavelength units = Nanometers\nwavelength = {400, 410, 420, 430}\nfwhm = {10, 10, 10, 10}\n"
	for _, tc := range []struct {
		name, header, want string
	}{
		{"nan wavelength", "wavelength units = Nanometers\nwavelength = {400, 410, nan, 430}\n", "band 3 wavelength nan"},
		{"inf wavelength", "wavelength units = Nanometers\nwavelength = {400, inf, 420, 430}\n", "band 2 wavelength inf"},
		{"negative wavelengths", "wavelength units = Nanometers\nwavelength = {-400, -410, -420, -430}\n", "band 1 wavelength -400"},
		{"unclosed list", "wavelength units = Nanometers\nwavelength = {400, 410, 420, 430\nfwhm = {10, 10, 10, 10}\n", "wavelength: list not closed"},
		{"unclosed list at the end", "wavelength units = Nanometers\nwavelength = {400, 410, 420, 430\n", "wavelength: list not closed"},
		{"negative fwhm", "wavelength units = Nanometers\nwavelength = {400, 410, 420, 430}\nfwhm = {10, -10, 10, 10}\n", "band 2 the FWHM -10"},
		{"gain 0", good + "data gain values = {1, 1, 0, 1}\n", "band 3 the data gain 0"},
		{"reflectance scale factor 0", good + "reflectance scale factor = 0\n", `reflectance scale factor "0"`},
		{"reflectance scale factor -10000", good + "reflectance scale factor = -10000\n", `reflectance scale factor "-10000"`},
		{"reflectance scale factor nan", good + "reflectance scale factor = nan\n", `reflectance scale factor "nan"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := writeENVI(t, t.TempDir(), 5, 4, 4, false, tc.header)
			s, err := Open(img)
			if err == nil {
				in := s.Info()
				s.Close()
				t.Fatalf("opened, wavelengths %v, scale %v, radiometry %+v; want the scene refused", in.WavelengthsNM, in.Scale, in.Radiometry)
			}
			if !errors.Is(err, ErrBandMetadata) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line wrapping ErrBandMetadata and saying %q", err, tc.want)
			}
		})
	}
	// The same header is accepted with valid values.
	s, err := Open(writeENVI(t, t.TempDir(), 5, 4, 4, false, good+"data gain values = {1, 1, 2, 1}\nreflectance scale factor = 10000\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in := s.Info(); len(in.WavelengthsNM) != 4 || in.Scale[2] != 2 {
		t.Errorf("valid header: wavelengths %v, scales %v", in.WavelengthsNM, in.Scale)
	}
	s.Close()
}

// TestInvalidSidecarMetadataRefused: the ENVI header DESIS puts beside its
// GeoTIFF (which GDAL ignores and pnec reads) is held to the same rules.
func TestInvalidSidecarMetadataRefused(t *testing.T) {
	for _, tc := range []struct {
		name, header, want string
	}{
		{"nan wavelength", "wavelength = {400, nan, 420}\n", "band 2 the wavelength nan"},
		{"negative fwhm", "wavelength = {400, 410, 420}\nfwhm = {-3, 3, 3}\n", "band 1 the FWHM -3"},
		{"gain 0", "wavelength = {400, 410, 420}\ndata gain values = {0, 0.0001, 0.0001}\n", "band 1 the data gain value 0"},
		{"reflectance scale factor -10000", "wavelength = {400, 410, 420}\nreflectance scale factor = -10000\n", `reflectance scale factor "-10000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tif := writeScene(t, dir, godal.Int16, 6, 5, 3, nil)
			hdr := strings.TrimSuffix(tif, filepath.Ext(tif)) + ".hdr"
			text := "ENVI\nsamples = 6\nlines = 5\nbands = 3\nfile type = TIFF\nwavelength units = Nanometers\n" + tc.header
			if err := os.WriteFile(hdr, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(tif)
			if err == nil {
				s.Close()
				t.Fatal("opened; want the scene refused")
			}
			if !errors.Is(err, ErrBandMetadata) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want ErrBandMetadata saying %q", err, tc.want)
			}
		})
	}
}

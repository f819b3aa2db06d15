package geo

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// halfValidVRT writes a cols x rows VRT whose left half is a small real
// GeoTIFF stretched over it and whose right half is the bands' nodata:
// exactly half of its pixels (cols even) are valid.
func halfValidVRT(t *testing.T, cols, rows int) string {
	t.Helper()
	dir := t.TempDir()
	src := writeScene(t, dir, godal.Float32, 40, 32, 2, nil)
	var b strings.Builder
	fmt.Fprintf(&b, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n", cols, rows)
	for i := 1; i <= 2; i++ {
		fmt.Fprintf(&b, `<VRTRasterBand dataType="Float32" band="%d"><NoDataValue>-1</NoDataValue><SimpleSource>`+
			`<SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>%d</SourceBand>`+
			`<SrcRect xOff="0" yOff="0" xSize="40" ySize="32"/><DstRect xOff="0" yOff="0" xSize="%d" ySize="%d"/>`+
			"</SimpleSource></VRTRasterBand>\n", i, src, i, cols/2, rows)
	}
	b.WriteString("</VRTDataset>\n")
	p := filepath.Join(dir, "half.vrt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidFractionEstimate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cols, rows int
		wantExact  bool
	}{
		{"small scene read whole", 2000, 2000, true},
		{"large scene sampled", 6000, 5000, false},
		{"huge declared size sampled", 1000000, 1000000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(halfValidVRT(t, tc.cols, tc.rows))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			f, exact, err := s.ValidFractionEstimate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if exact != tc.wantExact {
				t.Errorf("exact: got %v, want %v", exact, tc.wantExact)
			}
			// Sampling every f-th column of a half/half split misses the
			// boundary by at most one sample column.
			if tol := 0.002; math.Abs(f-0.5) > tol {
				t.Errorf("valid fraction: got %v, want 0.5 ± %v", f, tol)
			}
		})
	}
}

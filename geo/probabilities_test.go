package geo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// probPixel is the test probabilities' content for a pixel of a product
// of k classes: a percent per class, or ProbabilityNoData where the
// product pixel (productPixel) has no data.
func probPixel(k, r, c int, cls uint16) []uint16 {
	out := make([]uint16, k)
	if cls == ClassNoData {
		for i := range out {
			out[i] = ProbabilityNoData
		}
		return out
	}
	for i := range out {
		out[i] = uint16((r*3 + c*5 + i*17) % 101)
	}
	return out
}

// writeProbProduct writes a product with a probabilities companion of
// topK (0 = all classes); the probability values follow probPixel, and in
// a top-k file the class bands hold the first topK classes' values.
func writeProbProduct(t *testing.T, path string, pc productCase, cols, rows, topK int) ProductSpec {
	t.Helper()
	spec := ProductSpec{
		Cols: cols, Rows: rows,
		GeoRef:        GeoRef{GeoTransform: testGT, WKT: utm31(t)},
		Classes:       testClasses(pc.nClasses),
		Probabilities: &ProbabilitySpec{TopK: topK, Stage: "recovered"},
	}
	p, err := CreateProduct(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	k := len(spec.Classes)
	nb := p.ProbabilityBands()
	if nb != ProbabilityBandCount(k, topK) {
		t.Fatalf("got %d probability bands, want %d", nb, ProbabilityBandCount(k, topK))
	}
	for r0 := 0; r0 < rows; {
		n := min(41, rows-r0)
		cl := make([]uint16, n*cols)
		rl := make([]float32, n*cols)
		pv := make([]uint16, n*cols*nb)
		for r := 0; r < n; r++ {
			for c := 0; c < cols; c++ {
				i := r*cols + c
				cl[i], rl[i] = productPixel(spec.Classes, r0+r, c)
				all := probPixel(k, r0+r, c, cl[i])
				dst := pv[i*nb : (i+1)*nb]
				if topK == 0 {
					copy(dst, all)
					continue
				}
				for j := 0; j < topK; j++ {
					dst[2*j], dst[2*j+1] = uint16(spec.Classes[j].Value), all[j]
					if cl[i] == ClassNoData {
						dst[2*j] = ProbabilityNoData
					}
				}
			}
		}
		if err := p.WriteRows(r0, cl, rl); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteProbabilities(r0, pv); err != nil {
			t.Fatal(err)
		}
		r0 += n
	}
	if err := p.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestProbabilitiesFile writes probabilities companions of both layouts
// (a band per class, top-k pairs) for Byte and UInt16 products and reads
// them back through GDAL: values, no-data, band names, units, the
// overviews' exact means and MODE, and GDAL's COG validator.
func TestProbabilitiesFile(t *testing.T) {
	dir := t.TempDir()
	const cols, rows = 600, 530 // one overview level at 512 px blocks
	for _, tc := range []struct {
		pc   productCase
		topK int
	}{
		{productCases[0], 0},
		{productCases[0], 2},
		{productCases[1], 3},
		{productCase{"byte3", 3, false, godal.Byte, 255}, 0}, // 3 Byte bands: GDAL's COG writes them as RGB
	} {
		t.Run(fmt.Sprintf("%s_top%d", tc.pc.name, tc.topK), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("%s_%d.tif", tc.pc.name, tc.topK))
			spec := writeProbProduct(t, path, tc.pc, cols, rows, tc.topK)
			ds, err := godal.Open(ProbabilitiesPath(path))
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			k := len(spec.Classes)
			bands := ds.Bands()
			names := ProbabilityBandNames(spec.Classes, tc.topK)
			if len(bands) != len(names) {
				t.Fatalf("got %d bands, want %d", len(bands), len(names))
			}
			if md := ds.Metadata("PNEC_PROBABILITIES_STAGE"); md != "recovered" {
				t.Errorf("got PNEC_PROBABILITIES_STAGE %q, want recovered", md)
			}
			for bi, b := range bands {
				if b.Description() != names[bi] {
					t.Errorf("band %d: got description %q, want %q", bi+1, b.Description(), names[bi])
				}
				if nd, ok := b.NoData(); !ok || nd != tc.pc.relNoData {
					t.Errorf("band %d: got no-data %v (%v), want %v", bi+1, nd, ok, tc.pc.relNoData)
				}
				if b.Structure().DataType != tc.pc.wantType {
					t.Errorf("band %d: got type %v, want %v", bi+1, b.Structure().DataType, tc.pc.wantType)
				}
				isProb := tc.topK == 0 || bi%2 == 1
				vals, _, _ := readBand(t, b)
				for r := 0; r < rows; r++ {
					for c := 0; c < cols; c++ {
						cls, _ := productPixel(spec.Classes, r, c)
						all := probPixel(k, r, c, cls)
						var want float64
						switch {
						case cls == ClassNoData:
							want = tc.pc.relNoData
						case tc.topK == 0:
							want = float64(all[bi])
						case isProb:
							want = float64(all[bi/2])
						default:
							want = float64(spec.Classes[bi/2].Value)
						}
						if got := vals[r*cols+c]; got != want {
							t.Fatalf("band %d pixel (%d,%d): got %v, want %v", bi+1, r, c, got, want)
						}
					}
				}
				ovs := b.Overviews()
				if len(ovs) != 1 {
					t.Fatalf("band %d: %d overviews, want 1", bi+1, len(ovs))
				}
				ov, ow, _ := readBand(t, ovs[0])
				// One overview pixel, checked against the full resolution:
				// exact mean for probabilities, the majority for classes.
				const or, oc = 10, 17
				var sum float64
				var n int
				for r := 2 * or; r < 2*or+2; r++ {
					for c := 2 * oc; c < 2*oc+2; c++ {
						if v := vals[r*cols+c]; v != tc.pc.relNoData {
							sum += v
							n++
						}
					}
				}
				if isProb {
					if want := math.Round(sum / float64(n)); ov[or*ow+oc] != want {
						t.Errorf("band %d overview pixel: got %v, want the mean %v", bi+1, ov[or*ow+oc], want)
					}
				} else if ov[or*ow+oc] != float64(spec.Classes[bi/2].Value) {
					t.Errorf("class band %d overview pixel: got %v, want %d", bi+1, ov[or*ow+oc], spec.Classes[bi/2].Value)
				}
			}
			info := gdalinfo(t, ProbabilitiesPath(path))
			if !strings.Contains(info, `"LAYOUT":"COG"`) {
				t.Errorf("gdalinfo: not a COG layout")
			}
			if !strings.Contains(info, `"unit":"percent"`) {
				t.Errorf("gdalinfo: no band with unit percent")
			}
			if strings.Contains(info, `"colorInterpretation":"Alpha"`) {
				t.Errorf("gdalinfo: a band is marked alpha")
			}
			validateCOG(t, ProbabilitiesPath(path))
			// Decoded by GDAL's threads, as pnec reads (GDAL_NUM_THREADS=ALL_CPUS).
			cmd := exec.Command("gdalinfo", "-checksum", ProbabilitiesPath(path))
			cmd.Env = append(os.Environ(), "GDAL_NUM_THREADS=ALL_CPUS")
			if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR") {
				t.Errorf("gdalinfo -checksum with GDAL_NUM_THREADS=ALL_CPUS: %v\n%s", err, out)
			}
		})
	}
}

func gdalinfo(t *testing.T, path string) string {
	t.Helper()
	out := gdalinfoOutput(t, "-json", "-mdd", "all", path)
	var m any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m) // compact, so that tests can search it
	return string(b)
}

func validateCOG(t *testing.T, path string) {
	t.Helper()
	if err := exec.Command(pythonGDAL, "-c", "import osgeo_utils.samples.validate_cloud_optimized_geotiff").Run(); err != nil {
		t.Logf("%s lacks GDAL's COG validator (apt-get install python3-gdal): not validated", pythonGDAL)
		return
	}
	out, err := exec.Command(pythonGDAL, "-m", "osgeo_utils.samples.validate_cloud_optimized_geotiff", "--full-check=yes", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is a valid cloud optimized GeoTIFF") {
		t.Errorf("COG validator on %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// TestProbabilitiesErrors: bad requests and values fail with a message
// naming the file, and nothing is published.
func TestProbabilitiesErrors(t *testing.T) {
	dir := t.TempDir()
	spec := ProductSpec{Cols: 8, Rows: 4, Classes: testClasses(3), Probabilities: &ProbabilitySpec{TopK: 4}}
	if _, err := CreateProduct(filepath.Join(dir, "a.tif"), spec); err == nil || !strings.Contains(err.Error(), "top 4 of 3") {
		t.Errorf("top 4 of 3 classes: got %v, want an error", err)
	}
	spec.Probabilities.TopK = 0
	path := filepath.Join(dir, "b.tif")
	p, err := CreateProduct(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WriteProbabilities(0, make([]uint16, 5)); err == nil {
		t.Error("5 values for 8 columns x 3 bands: no error")
	}
	bad := make([]uint16, 8*3)
	bad[4] = 255
	if err := p.WriteProbabilities(0, bad); err == nil || !strings.Contains(err.Error(), "collides with the no-data") {
		t.Errorf("value 255 in a Byte file: got %v, want the no-data collision", err)
	}
	cl := make([]uint16, 8*4)
	rl := make([]float32, 8*4)
	if err := p.WriteRows(0, cl, rl); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(context.Background()); err == nil || !strings.Contains(err.Error(), "probabilities incomplete") {
		t.Errorf("commit without probability rows: got %v, want incomplete", err)
	}
	if ents := listDir(t, dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

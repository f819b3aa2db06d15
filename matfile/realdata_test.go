package matfile

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pnec/pnec/internal/shareddata"
)

// dataDir returns <repo root>/../shared/data, skipping the test when absent.
func dataDir(t testing.TB) string {
	t.Helper()
	d, err := shareddata.Find(".")
	if err != nil {
		t.Skipf("real data absent (%v); skipping", err)
	}
	return d
}

func dataFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(dataDir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s absent; skipping", p)
	}
	return p
}

// histogram counts integral values; it fails on non-integral or negative ones.
func histogram(t *testing.T, data []float32) map[int]int {
	t.Helper()
	h := map[int]int{}
	for i, v := range data {
		if v < 0 || v != float32(math.Trunc(float64(v))) {
			t.Fatalf("label %d = %v, want a non-negative integer", i, v)
		}
		h[int(v)]++
	}
	return h
}

func labelled(h map[int]int) int {
	n := 0
	for v, c := range h {
		if v != 0 {
			n += c
		}
	}
	return n
}

// TestLabelMaps checks shapes and counts against ../shared/data/README.md.
func TestLabelMaps(t *testing.T) {
	cases := []struct {
		file, varName string
		dims          []int
		classes       int
		labelled      int   // 0: not given by the README
		counts        []int // per class 1.., nil: not given
	}{
		{"PaviaU/paviaU_gt.mat", "paviaU_gt", []int{610, 340}, 9, 42776, []int{6631, 18649, 2099, 3064, 1345, 5029, 1330, 3682, 947}},
		{"PaviaU/TRpavia_fixed.mat", "TRpavia_fixed", []int{610, 340}, 9, 3921, nil},
		// The data README says 39,305 test pixels; the file holds 40,002
		// (scipy.io.loadmat counts the same), so the file's count is checked.
		{"PaviaU/TSpavia_fixed.mat", "TSpavia_fixed", []int{610, 340}, 9, 40002, []int{6304, 18146, 1815, 2912, 1113, 4572, 981, 3364, 795}},
		{"Houston2013/Houston_gt.mat", "Houston_gt", []int{349, 1905}, 15, 15029, nil},
		{"Houston2013/houston_gt_trte.mat", "houston_gt_tr", []int{349, 1905}, 15, 2832, nil},
		{"Houston2013/houston_gt_trte.mat", "houston_gt_te", []int{349, 1905}, 15, 12197, nil},
		{"Salinas/salinas_gt.mat", "", []int{512, 217}, 16, 54129, nil},
		{"IndianPines/indian_pines_corrected_gt.mat", "", []int{145, 145}, 16, 10249, nil},
		{"KSC/KSC_gt.mat", "", []int{512, 614}, 13, 5211, nil},
		{"Botswana/Botswana_gt.mat", "", []int{1476, 256}, 14, 3248, nil},
		{"PaviaC/paviaC_gt.mat", "", []int{1096, 715}, 9, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.file+":"+tc.varName, func(t *testing.T) {
			a, err := ReadArray(dataFile(t, tc.file), tc.varName)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.Dims, tc.dims) {
				t.Fatalf("dims: got %v, want %v", a.Dims, tc.dims)
			}
			h := histogram(t, a.Data)
			for v := range h {
				if v > tc.classes {
					t.Errorf("label value %d above the %d classes", v, tc.classes)
				}
			}
			if got := len(h) - 1; got != tc.classes {
				t.Errorf("got %d distinct classes, want %d", got, tc.classes)
			}
			if tc.labelled != 0 && labelled(h) != tc.labelled {
				t.Errorf("labelled pixels: got %d, want %d", labelled(h), tc.labelled)
			}
			for i, want := range tc.counts {
				if h[i+1] != want {
					t.Errorf("class %d: got %d pixels, want %d", i+1, h[i+1], want)
				}
			}
		})
	}
}

// TestHoustonSplit: the train and test maps are disjoint and together the
// full ground truth.
func TestHoustonSplit(t *testing.T) {
	split := dataFile(t, "Houston2013/houston_gt_trte.mat")
	vars, err := Variables(split)
	if err != nil {
		t.Fatal(err)
	}
	want := []VarInfo{{Name: "houston_gt_tr", Class: "uint8", Dims: []int{349, 1905}}, {Name: "houston_gt_te", Class: "uint8", Dims: []int{349, 1905}}}
	if !reflect.DeepEqual(vars, want) {
		t.Fatalf("got %+v, want %+v", vars, want)
	}
	tr, err := ReadArray(split, "houston_gt_tr")
	if err != nil {
		t.Fatal(err)
	}
	te, err := ReadArray(split, "houston_gt_te")
	if err != nil {
		t.Fatal(err)
	}
	gt, err := ReadArray(dataFile(t, "Houston2013/Houston_gt.mat"), "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range gt.Data {
		if tr.Data[i] != 0 && te.Data[i] != 0 {
			t.Fatalf("pixel %d in both train and test", i)
		}
		if u := tr.Data[i] + te.Data[i]; u != gt.Data[i] {
			t.Fatalf("pixel %d: train+test %v, want ground truth %v", i, u, gt.Data[i])
		}
	}
}

func TestSalinasA(t *testing.T) {
	cubeFile := dataFile(t, "SalinasA/SalinasA_corrected.mat")
	a, err := ReadArray(cubeFile, "salinasA_corrected")
	if err != nil {
		t.Fatal(err)
	}
	if a.Class != "double" || !reflect.DeepEqual(a.Dims, []int{83, 86, 204}) {
		t.Fatalf("got %s %v, want double [83 86 204]", a.Class, a.Dims)
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, v := range a.Data {
		if v != float32(math.Trunc(float64(v))) {
			t.Fatalf("value %v not integral (the file stores int16)", v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	// int16 storage bounds the values; AVIRIS radiance is non-trivial.
	if lo < math.MinInt16 || hi > math.MaxInt16 || hi-lo < 1000 {
		t.Errorf("value range [%v, %v]: want within int16 and spread over more than 1000", lo, hi)
	}
	t.Logf("SalinasA values in [%v, %v]", lo, hi)
	rows, cols, bands, px, err := ReadImage(cubeFile, "")
	if err != nil || rows != 83 || cols != 86 || bands != 204 {
		t.Fatalf("ReadImage: got %dx%dx%d %v, want 83x86x204", rows, cols, bands, err)
	}
	_, _, _, px2, err := a.Image()
	if err != nil || !reflect.DeepEqual(px, px2) {
		t.Fatalf("ReadImage and Array.Image differ (%v)", err)
	}
	gt, err := ReadArray(dataFile(t, "SalinasA/SalinasA_gt.mat"), "salinasA_gt")
	if err != nil {
		t.Fatal(err)
	}
	h := histogram(t, gt.Data)
	classes := []int{}
	for v := range h {
		if v != 0 {
			classes = append(classes, v)
		}
	}
	for _, v := range []int{1, 10, 11, 12, 13, 14} {
		if h[v] == 0 {
			t.Errorf("class %d absent from salinasA_gt", v)
		}
	}
	if len(classes) != 6 {
		t.Errorf("got classes %v, want 1,10,11,12,13,14", classes)
	}
	checkTrainSplit(t, "SalinasA/SalinasA_train_seed12345.mat", gt)
}

// checkTrainSplit: a training map holds 15 pixels per class, each with the
// ground truth's value.
func checkTrainSplit(t *testing.T, file string, gt Array) {
	t.Helper()
	tr, err := ReadArray(dataFile(t, file), "train")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr.Dims, gt.Dims) {
		t.Fatalf("%s: dims %v, want %v", file, tr.Dims, gt.Dims)
	}
	per := map[float32]int{}
	for i, v := range tr.Data {
		if v != 0 {
			if v != gt.Data[i] {
				t.Fatalf("%s: pixel %d is %v, ground truth %v", file, i, v, gt.Data[i])
			}
			per[v]++
		}
	}
	for v, n := range per {
		if n != 15 {
			t.Errorf("%s: class %v has %d training pixels, want 15", file, v, n)
		}
	}
}

func TestJasperRidge(t *testing.T) {
	file := dataFile(t, "JasperRidge/JasperRidge2_R198.mat")
	vars, err := Variables(file)
	if err != nil {
		t.Fatal(err)
	}
	if !IsUnmixing(vars) {
		t.Fatalf("IsUnmixing(%v) = false, want true", vars)
	}
	y, err := ReadArray(file, "Y")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(y.Dims, []int{198, 10000}) {
		t.Fatalf("Y dims: got %v, want [198 10000]", y.Dims)
	}
	maxV, err := ReadArray(file, "maxValue")
	if err != nil {
		t.Fatal(err)
	}
	var hi float32
	for _, v := range y.Data {
		if v < 0 || v != float32(math.Trunc(float64(v))) {
			t.Fatalf("Y value %v: want a non-negative integer (uint16 storage)", v)
		}
		hi = max(hi, v)
	}
	// maxValue (5000) is a nominal scale, not the maximum: scipy also finds 5437.
	if hi > math.MaxUint16 || hi < maxV.Data[0] {
		t.Errorf("max of Y = %v, want within uint16 and at least maxValue %v", hi, maxV.Data[0])
	}
	t.Logf("Y max %v, maxValue %v", hi, maxV.Data[0])
	rows, cols, bands, px, err := ReadUnmixing(file)
	if err != nil || rows != 100 || cols != 100 || bands != 198 {
		t.Fatalf("ReadUnmixing: got %dx%dx%d %v, want 100x100x198", rows, cols, bands, err)
	}
	for _, rc := range [][2]int{{0, 0}, {0, 99}, {99, 0}, {37, 64}, {99, 99}} {
		r, c := rc[0], rc[1]
		for b := 0; b < bands; b++ {
			if got, want := px[(r*cols+c)*bands+b], y.Data[b+bands*(r+rows*c)]; got != want {
				t.Fatalf("pixel (%d,%d) band %d = %v, want Y(%d, %d) = %v", r, c, b, got, b, r+rows*c, want)
			}
		}
	}

	// jasper_gt is argmax of the abundances A (4 x pixels, same pixel order).
	gt, err := ReadArray(dataFile(t, "JasperRidge/JasperRidge_gt.mat"), "jasper_gt")
	if err != nil {
		t.Fatal(err)
	}
	if gt.Class != "uint8" || !reflect.DeepEqual(gt.Dims, []int{100, 100}) {
		t.Fatalf("jasper_gt: got %s %v, want uint8 [100 100]", gt.Class, gt.Dims)
	}
	ab, err := ReadArray(dataFile(t, "JasperRidge/end4_P4SU.mat"), "A")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ab.Dims, []int{4, 10000}) {
		t.Fatalf("A dims: got %v, want [4 10000]", ab.Dims)
	}
	for p := 0; p < 10000; p++ {
		best := 0
		for k := 1; k < 4; k++ {
			if ab.Data[k+4*p] > ab.Data[best+4*p] {
				best = k
			}
		}
		if gt.Data[p] != float32(best+1) {
			t.Fatalf("pixel %d: jasper_gt %v, want argmax(A)+1 = %d", p, gt.Data[p], best+1)
		}
	}
	checkTrainSplit(t, "JasperRidge/JasperRidge_train_seed12345.mat", gt)
}

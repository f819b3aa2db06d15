package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pnec/pnec/internal/threadcpu"
	"github.com/pnec/pnec/model/internal/kernels"
)

// agreementOracle is the spectral agreement computed the plain way, in
// float64: the angle to every reference, the smallest per group.
func agreementOracle(ref []float32, bands int, class []int, s []float32, label int) float64 {
	unit := func(v []float32) []float64 {
		n := 0.0
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		u := make([]float64, len(v))
		for i, x := range v {
			u[i] = float64(x) / math.Sqrt(n)
		}
		return u
	}
	p := unit(s)
	aLabel, aOther := math.Inf(1), math.Inf(1)
	for j, c := range class {
		r := unit(ref[j*bands : (j+1)*bands])
		dot := 0.0
		for b := range r {
			dot += r[b] * p[b]
		}
		a := math.Acos(math.Max(-1, math.Min(1, dot)))
		if c == label {
			aLabel = math.Min(aLabel, a)
		} else {
			aOther = math.Min(aOther, a)
		}
	}
	return aOther / (aLabel + aOther)
}

func randomReference(rng *rand.Rand, bands, classes, perClass int) ([]float32, []int) {
	ref := make([]float32, classes*perClass*bands)
	cls := make([]int, classes*perClass)
	for i := range ref {
		ref[i] = 1000 + 500*rng.Float32()
	}
	for i := range cls {
		cls[i] = (i * 7) % classes // classes interleaved, as a split gives them
	}
	return ref, cls
}

// TestSpectralCosinesMatchOracle: the fast kernel (SIMD where available,
// goroutines over pixels) gives the float64 oracle's agreement, for
// reference counts that are and are not multiples of the vector width.
func TestSpectralCosinesMatchOracle(t *testing.T) {
	for _, tc := range []struct{ bands, classes, perClass, pixels int }{
		{103, 9, 15, 5000}, {7, 3, 1, 10}, {204, 6, 15, 300}, {5, 2, 4, 9},
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.bands), 3))
		ref, cls := randomReference(rng, tc.bands, tc.classes, tc.perClass)
		r, err := NewSpectralReference(ref, tc.bands, cls, tc.classes)
		if err != nil {
			t.Fatal(err)
		}
		px := make([]float32, tc.pixels*tc.bands)
		for i := range px {
			px[i] = 1000 + 500*rng.Float32()
		}
		valid := make([]bool, tc.pixels)
		for i := range valid {
			valid[i] = i%13 != 5
		}
		cos := make([]float32, tc.pixels*tc.classes)
		if err := r.ClassDistances(px, valid, cos); err != nil {
			t.Fatal(err)
		}
		scalar := make([]float32, r.padded)
		simd := make([]float32, r.padded)
		for i := 0; i < tc.pixels; i++ {
			s := px[i*tc.bands : (i+1)*tc.bands]
			label := i % tc.classes
			got := AgreementOf(cos[i*tc.classes:(i+1)*tc.classes], label)
			if !valid[i] {
				if !math.IsNaN(float64(got)) {
					t.Fatalf("%d bands, invalid pixel %d: got %v, want NaN", tc.bands, i, got)
				}
				continue
			}
			// Random spectra of this kind lie within a few degrees of each
			// other, so float32 cosines move the angles by up to ~1e-3 relative.
			if want := agreementOracle(ref, tc.bands, cls, s, label); math.Abs(float64(got)-want) > 2e-3 {
				t.Fatalf("%d bands, pixel %d: got %v, want %v", tc.bands, i, got, want)
			}
			if a := r.Agreement(s, label); a != got {
				t.Fatalf("%d bands, pixel %d: Agreement %v, ClassDistances %v", tc.bands, i, a, got)
			}
			kernels.DotsScalar(r.unitT, r.padded, s, scalar)
			kernels.DotsSIMD(r.unitT, r.padded, s, simd)
			for j := range scalar {
				if math.Abs(float64(scalar[j]-simd[j])) > 1e-5*math.Abs(float64(scalar[j]))+1e-6 {
					t.Fatalf("%d bands, pixel %d, reference %d: scalar %v, simd %v", tc.bands, i, j, scalar[j], simd[j])
				}
			}
		}
	}
}

func TestAgreementOfEdges(t *testing.T) {
	cases := []struct {
		name  string
		cos   []float32
		label int
		want  float64
	}{
		{"label without references", []float32{NoReference, 0.1}, 0, 0},
		{"no competitor", []float32{0.1, NoReference}, 0, 1},
		{"identical angles", []float32{0.1, 0.1}, 0, 0.5},
		{"right angle vs zero", []float32{1, 0}, 1, 1},
		{"nearest other class counts", []float32{0.5, 0, 1}, 0, 0},
		{"no data", []float32{float32(math.NaN()), float32(math.NaN())}, 0, math.NaN()},
		{"label out of range", []float32{0.9, 0.8}, 2, math.NaN()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := float64(AgreementOf(tc.cos, tc.label))
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestModelFileSpectralReference: Train stores the training pixels' raw
// spectra, a saved and loaded model gives the same reference, and a file
// without them (the format before they were stored) loads with
// ErrNoSpectralReference.
func TestModelFileSpectralReference(t *testing.T) {
	s, labels := synthScene(9, 10, 4, 2, 2)
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(1), TrainPerClass: 3, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := m.SpectralReference()
	if err != nil {
		t.Fatal(err)
	}
	if ref.Len() != 6 || ref.Bands() != 4 || ref.Classes() != 2 {
		t.Fatalf("reference of %d spectra, %d bands, %d classes; want 6, 4, 2", ref.Len(), ref.Bands(), ref.Classes())
	}
	for t2, i := range m.TrainIndices() {
		want := s.Data[i*4 : (i+1)*4]
		got := m.meta.spectralSpectra[t2*4 : (t2+1)*4]
		for b := range want {
			if got[b] != want[b] {
				t.Fatalf("training pixel %d band %d: stored %v, scene %v", i, b, got[b], want[b])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "m.pnec")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ref2, err := m2.SpectralReference()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < s.Rows*s.Cols; i++ {
		px := s.Data[i*4 : (i+1)*4]
		for label := range 2 {
			if a, b := ref.Agreement(px, label), ref2.Agreement(px, label); a != b {
				t.Fatalf("pixel %d label %d: agreement %v before saving, %v after", i, label, a, b)
			}
		}
	}

	// The old format: no spectra in the header or after the prototype bank.
	m2.meta.SpectralClasses, m2.meta.spectralSpectra = nil, nil
	old := filepath.Join(t.TempDir(), "old.pnec")
	if err := m2.Save(old); err != nil {
		t.Fatal(err)
	}
	m3, err := Load(old)
	if err != nil {
		t.Fatalf("old-format file: %v", err)
	}
	if _, err := m3.SpectralReference(); !errors.Is(err, ErrNoSpectralReference) {
		t.Errorf("old-format file: SpectralReference error %v, want ErrNoSpectralReference", err)
	}
}

// BenchmarkSpectralReliabilityPaviaU measures the spectral reliability's
// per-pixel work at Pavia University's scale: 15 training pixels for each
// of 9 classes, 103 bands, all 610x340 pixels per op (class distances on
// GOMAXPROCS goroutines, then the agreement with a label).
func BenchmarkSpectralReliabilityPaviaU(b *testing.B) {
	rng := rand.New(rand.NewPCG(17, 18))
	rows, cols, bands, classes := 610, 340, 103, 9
	ref, cls := randomReference(rng, bands, classes, 15)
	r, err := NewSpectralReference(ref, bands, cls, classes)
	if err != nil {
		b.Fatal(err)
	}
	n := rows * cols
	px := make([]float32, n*bands)
	for i := range px {
		px[i] = 1000 + 500*rng.Float32()
	}
	cos := make([]float32, n*classes)
	rel := make([]float32, n)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.ClassDistances(px, nil, cos); err != nil {
			b.Fatal(err)
		}
		for i := range rel {
			rel[i] = AgreementOf(cos[i*classes:(i+1)*classes], i%classes)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pixel")
}

// TestTrainSpectraBounded: a class with more training pixels than the
// model stores keeps chooseMaxPerClass of them, its own; smaller classes
// keep all theirs in order.
func TestTrainSpectraBounded(t *testing.T) {
	s := Scene{Rows: 30, Cols: 30, Bands: 2, Data: make([]float32, 1800)}
	for i := range 900 {
		s.Data[2*i], s.Data[2*i+1] = float32(i), 1
	}
	var idx []int
	var y []int32
	for i := range 900 {
		if i%100 == 7 {
			idx, y = append(idx, i), append(y, 1) // 9 pixels of class 1
		} else if i < 600 {
			idx, y = append(idx, i), append(y, 0) // 594 of class 0
		}
	}
	spectra, class := trainSpectra(s, idx, y, 2, 5)
	n := map[int]int{}
	for k, c := range class {
		n[c]++
		px := int(spectra[2*k])
		if c == 1 && px%100 != 7 || c == 0 && (px >= 600 || px%100 == 7) {
			t.Fatalf("stored spectrum of pixel %d as class %d", px, c)
		}
	}
	if n[0] != chooseMaxPerClass || n[1] != 9 {
		t.Errorf("stored %d and %d spectra of classes 0 and 1, want %d and 9", n[0], n[1], chooseMaxPerClass)
	}
	if a, b := trainSpectra(s, idx, y, 2, 5); !slices.Equal(a, spectra) || !slices.Equal(b, class) {
		t.Error("the same seed drew other spectra")
	}
}

// BenchmarkClassDistancesFused is the fused decision's distances as
// classify measures them (Model.DecisionReference: the copies' dots made
// from the linear basis, linearCopies) for bench-big's model size: 8
// classes of 15 training pixels of 200 bands and the default
// augmentation's 26 changed groups, on a 384 px tile. GFLOP/cpu-s counts
// the dots of the 3,240 references the decision measures, so that it
// compares with BenchmarkClassDistancesFusedCopies, which computes each
// copy's dot itself.
func BenchmarkClassDistancesFused(b *testing.B) {
	benchmarkFused(b, true)
}

// BenchmarkClassDistancesFusedCopies is BenchmarkClassDistancesFused with
// every copy's dot computed from the copy itself (NewAlignedReference),
// as before the linear basis.
func BenchmarkClassDistancesFusedCopies(b *testing.B) {
	benchmarkFused(b, false)
}

// bigModelTile is the fused decision's reference for bench-big's model
// size (8 classes of 15 training pixels of 200 bands and the default
// augmentation's changed groups, on the linear basis or with every copy
// itself) and a 384 px tile of random spectra, n pixels.
func bigModelTile(b *testing.B, linear bool) (r *SpectralReference, px []float32, n int) {
	rng := rand.New(rand.NewPCG(17, 18))
	const bands, classes, per = 200, 8, 15
	ref, cls := randomReference(rng, bands, classes, per)
	var changed [][]float32
	for _, c := range referenceChanges(DefaultAugment) {
		changed = append(changed, changedSpectra(ref, bands, c))
	}
	r, err := NewAlignedReference(ref, bands, cls, classes, changed, 0.01)
	if linear {
		r, err = newChangedReference(ref, bands, cls, classes, referenceChanges(DefaultAugment), 0.01)
	}
	if err != nil {
		b.Fatal(err)
	}
	n = 384 * 384
	px = make([]float32, n*bands)
	for i := range px {
		px[i] = 1000 + 500*rng.Float32()
	}
	return r, px, n
}

func benchmarkFused(b *testing.B, linear bool) {
	r, px, n := bigModelTile(b, linear)
	bands, classes := r.bands, r.classes
	out := make([]float32, n*classes)
	aligned := r.alignedGroup(px, nil)
	t0 := threadcpu.Seconds()
	for b.Loop() {
		r.distancesOf(px, nil, out, 0, n, aligned)
	}
	cpu := threadcpu.Seconds() - t0
	b.ReportMetric(cpu/float64(b.N)/float64(n)*1e9, "cpu-ns/pixel")
	b.ReportMetric(2*float64(bands)*float64(r.Len())*float64(n)*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
}

// BenchmarkClassDistancesDefault is BenchmarkClassDistancesFused with the
// default decision's reference (copy penalty pi, local mean of
// DecisionLocalMean): a tile aligned to the spectra is measured against
// them alone (the alignment itself, on a sample, excluded as there).
func BenchmarkClassDistancesDefault(b *testing.B) {
	rng := rand.New(rand.NewPCG(17, 18))
	const bands, classes, per = 200, 8, 15
	ref, cls := randomReference(rng, bands, classes, per)
	r, err := newChangedReferenceMean(ref, bands, cls, classes, referenceChanges(DefaultAugment), math.Pi, DecisionLocalMean)
	if err != nil {
		b.Fatal(err)
	}
	n := 384 * 384
	px := make([]float32, n*bands)
	for i := range px {
		px[i] = 1000 + 500*rng.Float32()
	}
	out := make([]float32, n*classes)
	if err := r.ClassDistances(px[:64*bands], nil, out[:64*classes]); err != nil { // builds the aligned group's reference
		b.Fatal(err)
	}
	alone := r.alone[r.alignedGroup(px, nil)].ref
	if alone == nil {
		b.Fatal("the tile aligns to a group not built")
	}
	t0 := threadcpu.Seconds()
	for b.Loop() {
		alone.distancesOf(px, nil, out, 0, n, 0)
	}
	cpu := threadcpu.Seconds() - t0
	b.ReportMetric(cpu/float64(b.N)/float64(n)*1e9, "cpu-ns/pixel")
}

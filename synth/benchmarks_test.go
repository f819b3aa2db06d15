package synth

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/geo"
)

// benchSize is the procedural scene side for benchmarks; PNEC_BENCH_QUICK=1
// (make bench-quick) shrinks it.
func benchSize() int {
	if os.Getenv("PNEC_BENCH_QUICK") == "1" {
		return 128
	}
	return 512
}

// BenchmarkGenerate measures pixel synthesis alone (103 bands, rank-8
// modes, mixing and noise on), on all cores, in samples (pixel x band) per
// second.
func BenchmarkGenerate(b *testing.B) {
	n := benchSize()
	l, err := Procedural(n, n, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Bands = 103
	g, err := New(l, fakeSource(b, 103), cfg)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]float32, n*n*103)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := g.generateParallel(context.Background(), 0, n, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*n*103)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Msamples/s")
}

// BenchmarkWriteScene measures generation plus the Int16 GeoTIFF write
// through geo (tiled, DEFLATE), in samples per second.
func BenchmarkWriteScene(b *testing.B) {
	n := benchSize()
	l, _ := Procedural(n, n, 1)
	cfg := DefaultConfig()
	cfg.Bands = 103
	g, err := New(l, fakeSource(b, 103), cfg)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := WriteScene(context.Background(), g, WriteOptions{Path: filepath.Join(dir, "s.tif"), DataType: geo.Int16, GeoRef: DefaultGeoRef(1)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*n*103)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Msamples/s")
}

// BenchmarkProcedural measures drawing a procedural layout, in pixels per second.
func BenchmarkProcedural(b *testing.B) {
	n := 2 * benchSize()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Procedural(n, n, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpixels/s")
}

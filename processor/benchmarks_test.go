package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
)

// Benchmarks of whole-scene classification. Scenes are VRTs that repeat one
// small generated GeoTIFF block, so that large scenes cost no disk; each
// measured run happens in a child process (this test binary re-executed)
// so that its peak RSS is its own.

// benchChildEnv carries a childJob to a re-executed test binary.
const benchChildEnv = "PNEC_PROCESSOR_BENCH_CHILD"

type childJob struct {
	Model, Scene, Out string
	TileSize, Overlap int
}

type childResult struct {
	Result
	MaxRSSBytes int64
	CPU         time.Duration // user + system time of the child: work done, whatever the contention
	GoSysBytes  uint64        // memory the Go runtime obtained from the OS (runtime.MemStats.Sys)
}

func init() {
	// The child runs before any test: classify one scene, print the result as
	// JSON, exit. (init, not TestMain, so that it needs no fixture.)
	spec := os.Getenv(benchChildEnv)
	if spec == "" {
		return
	}
	var j childJob
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		os.Exit(3)
	}
	m, err := model.Load(j.Model)
	if err == nil {
		var c *Classifier
		if c, err = NewClassifier(m, Options{Backend: "go", TileSize: j.TileSize, Overlap: j.Overlap}); err == nil {
			var res Result
			res, err = c.Run(context.Background(), Request{Scene: j.Scene, Out: j.Out})
			c.Close()
			if err == nil {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				json.NewEncoder(os.Stdout).Encode(childResult{Result: res, GoSysBytes: ms.Sys})
				os.Exit(0)
			}
		}
	}
	fmt.Fprintln(os.Stderr, "bench child:", err)
	os.Exit(3)
}

// runChild classifies in a child process and returns its result and peak RSS.
func runChild(b *testing.B, j childJob) childResult {
	b.Helper()
	spec, _ := json.Marshal(j)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("child %s: %v\n%s", j.Scene, err, stderr.String())
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("child output %q: %v", out, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSBytes = ru.Maxrss << 10 // kilobytes on Linux
	}
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r
}

// benchModel trains a small model (hidden 16, 8 epochs) for bands bands on a
// small synthetic scene and saves it in dir.
func benchModel(b *testing.B, dir string, bands int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("model%d.pnec", bands))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	data, labels := synthScene(48, 48, bands, fixClasses, 1)
	cfg := model.DefaultConfig()
	cfg.Hidden, cfg.DState, cfg.HeadDim, cfg.Chunk = 16, 8, 16, 32
	cfg.Epochs, cfg.ECWarmupEpochs = 8, 2
	m, err := model.Train(context.Background(), model.Scene{Rows: 48, Cols: 48, Bands: bands, Data: data}, labels,
		model.TrainOptions{Config: cfg, Backend: "go"})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Save(path); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchBlock writes a blockRows x blockCols generated block with bands bands.
func benchBlock(b *testing.B, dir string, blockRows, blockCols, bands int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("block%dx%dx%d.tif", blockRows, blockCols, bands))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	data, _ := synthScene(blockRows, blockCols, bands, fixClasses, 2)
	ref := geo.GeoRef{GeoTransform: [6]float64{448000, 2.5, 0, 5412000, 0, -2.5}, EPSG: 32632, WKT: epsg32632WKT}
	if err := writeScene(path, blockRows, blockCols, bands, data, ref); err != nil {
		b.Fatal(err)
	}
	return path
}

// writeRepeatVRT writes a rows x cols VRT that tiles block (blockRows x blockCols) over it.
func writeRepeatVRT(b *testing.B, path, block string, blockRows, blockCols, bands, rows, cols int) {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n", cols, rows)
	fmt.Fprintf(&sb, " <SRS>%s</SRS>\n <GeoTransform>448000, 2.5, 0, 5412000, 0, -2.5</GeoTransform>\n", epsg32632WKT)
	for band := 1; band <= bands; band++ {
		fmt.Fprintf(&sb, " <VRTRasterBand dataType=\"Float32\" band=\"%d\">\n  <NoDataValue>%d</NoDataValue>\n", band, fixNoData)
		for r0 := 0; r0 < rows; r0 += blockRows {
			for c0 := 0; c0 < cols; c0 += blockCols {
				h, w := min(blockRows, rows-r0), min(blockCols, cols-c0)
				fmt.Fprintf(&sb, "  <SimpleSource><SourceFilename relativeToVRT=\"1\">%s</SourceFilename><SourceBand>%d</SourceBand>"+
					"<SrcRect xOff=\"0\" yOff=\"0\" xSize=\"%d\" ySize=\"%d\"/><DstRect xOff=\"%d\" yOff=\"%d\" xSize=\"%d\" ySize=\"%d\"/></SimpleSource>\n",
					filepath.Base(block), band, w, h, c0, r0, w, h)
			}
		}
		sb.WriteString(" </VRTRasterBand>\n")
	}
	sb.WriteString("</VRTDataset>\n")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// macroDone records the macro benchmarks already measured in this process.
var macroDone = map[string]bool{}

// macroOnce skips a whole-scene benchmark in quick mode (PNEC_BENCH_QUICK,
// set by make bench-quick: each takes minutes) and after its first run in a
// process: make bench runs every benchmark -count times, and these measure
// minutes of work whose table is printed once.
func macroOnce(b *testing.B, name string) {
	b.Helper()
	if os.Getenv("PNEC_BENCH_QUICK") != "" {
		b.Skip("whole-scene benchmark: make bench only (takes minutes)")
	}
	if macroDone[name] {
		b.Skip("whole-scene benchmark: measured once per run (see the first table)")
	}
	macroDone[name] = true
}

// benchTmp holds the benchmarks' generated blocks, VRTs and models for one
// process (removed by TestMain), so that no stale file of an earlier build is reused.
var (
	benchTmpOnce sync.Once
	benchTmp     string
	benchTmpErr  error
)

func benchDir(b *testing.B) string {
	b.Helper()
	benchTmpOnce.Do(func() { benchTmp, benchTmpErr = os.MkdirTemp("", "pnec-processor-bench-") })
	if benchTmpErr != nil {
		b.Fatal(benchTmpErr)
	}
	return benchTmp
}

func share(d, total time.Duration) string {
	return fmt.Sprintf("%4.0f%%", 100*d.Seconds()/max(total.Seconds(), 1e-9))
}

// BenchmarkClassifyHeightScaling classifies scenes of constant width and
// 1k, 2k, 4k and 8k rows through the tiled path: wall time should grow
// about linearly and peak RSS stay flat (the canvas is a stripe).
func BenchmarkClassifyHeightScaling(b *testing.B) {
	const cols, bands, tile, overlap = 128, 16, 128, 32
	macroOnce(b, "height")
	dir := benchDir(b)
	modelPath := benchModel(b, dir, bands)
	block := benchBlock(b, dir, 256, cols, bands)
	heights := []int{1024, 2048, 4096, 8192}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var rows []string
		var firstRSS int64
		var firstSecPerRow, firstCPUPerRow float64
		for _, h := range heights {
			scene := filepath.Join(dir, fmt.Sprintf("h%d.vrt", h))
			writeRepeatVRT(b, scene, block, 256, cols, bands, h, cols)
			r := runChild(b, childJob{Model: modelPath, Scene: scene, Out: filepath.Join(dir, "h.tif"), TileSize: tile, Overlap: overlap})
			secPerRow := r.Elapsed.Seconds() / float64(h)
			cpuPerRow := r.CPU.Seconds() / float64(h)
			if firstRSS == 0 {
				firstRSS, firstSecPerRow, firstCPUPerRow = r.MaxRSSBytes, secPerRow, cpuPerRow
			}
			rows = append(rows, fmt.Sprintf("%6d x %d  %5d tiles  %8.2f s  %6.2f ms/row (x%.2f)  CPU %7.2f s  %6.2f ms/row (x%.2f)  peak RSS %6.1f MiB (x%.2f)  Go runtime %5.1f MiB",
				h, cols, r.Tiles, r.Elapsed.Seconds(), 1000*secPerRow, secPerRow/firstSecPerRow,
				r.CPU.Seconds(), 1000*cpuPerRow, cpuPerRow/firstCPUPerRow,
				float64(r.MaxRSSBytes)/(1<<20), float64(r.MaxRSSBytes)/float64(firstRSS), float64(r.GoSysBytes)/(1<<20)))
			b.ReportMetric(float64(r.MaxRSSBytes)/(1<<20), fmt.Sprintf("MiB-peak-%drows", h))
			b.ReportMetric(r.Elapsed.Seconds(), fmt.Sprintf("s-%drows", h))
			b.ReportMetric(r.CPU.Seconds(), fmt.Sprintf("cpu-s-%drows", h))
		}
		fmt.Printf("\nclassify height scaling (%d bands, hidden 16, tiles %d overlap %d, go backend):\n  rows x cols  tiles  wall  per row  CPU time  per row  peak RSS\n", bands, tile, overlap)
		for _, r := range rows {
			fmt.Println("  " + r)
		}
	}
}

// BenchmarkClassifyPaperSizes times full scenes of the paper's three
// benchmark sizes, whole image (a tile larger than the scene) and on the
// model's grid (the default: 384 px tiles), with the share of each stage.
func BenchmarkClassifyPaperSizes(b *testing.B) {
	scenes := []struct {
		name              string
		rows, cols, bands int
	}{
		{"PaviaU", 610, 340, 103},
		{"Houston2013", 349, 1905, 144},
		{"HanChuan", 1217, 303, 274},
	}
	macroOnce(b, "paper")
	dir := benchDir(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fmt.Printf("\nclassify paper-sized scenes (hidden 16, go backend; stage shares of wall time, stages overlap):\n")
		fmt.Printf("  %-12s %-16s %-6s %6s %9s %6s %8s %7s %6s %9s\n", "scene", "size", "run", "tiles", "wall", "read", "network", "stitch", "write", "peak RSS")
		for _, s := range scenes {
			modelPath := benchModel(b, dir, s.bands)
			block := benchBlock(b, dir, 128, 128, s.bands)
			scene := filepath.Join(dir, s.name+".vrt")
			writeRepeatVRT(b, scene, block, 128, 128, s.bands, s.rows, s.cols)
			for _, run := range []struct {
				name          string
				tile, overlap int
			}{{"whole", 1 << 20, 0}, {"grid", 0, 0}} {
				r := runChild(b, childJob{Model: modelPath, Scene: scene, Out: filepath.Join(dir, "p.tif"), TileSize: run.tile, Overlap: run.overlap})
				t := r.Times
				fmt.Printf("  %-12s %-16s %-6s %6d %8.2fs %6s %8s %7s %6s %6.0f MiB\n", s.name,
					fmt.Sprintf("%dx%dx%d", s.rows, s.cols, s.bands), run.name, r.Tiles, r.Elapsed.Seconds(),
					share(t.Read, r.Elapsed), share(t.Network, r.Elapsed), share(t.Stitch, r.Elapsed), share(t.Write, r.Elapsed),
					float64(r.MaxRSSBytes)/(1<<20))
				b.ReportMetric(r.Elapsed.Seconds(), "s-"+s.name+"-"+run.name)
			}
		}
	}
}

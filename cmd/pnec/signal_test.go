package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// bigFixtureScene writes the fixture scene and a VRT that stretches it
// (nearest neighbour) to rows x cols pixels: a scene large enough that
// classifying it takes many seconds, without writing its pixels.
func bigFixtureScene(t *testing.T, dir string, rows, cols int) string {
	t.Helper()
	return fixtureVRT(t, dir, "big.vrt", rows, cols, func(b *strings.Builder, band int) {
		fmt.Fprintf(b, "    <SimpleSource><SourceFilename relativeToVRT=\"1\">fixture.tif</SourceFilename><SourceBand>%d</SourceBand>", band)
		fmt.Fprintf(b, "<SrcRect xOff=\"0\" yOff=\"0\" xSize=\"%d\" ySize=\"%d\"/><DstRect xOff=\"0\" yOff=\"0\" xSize=\"%d\" ySize=\"%d\"/></SimpleSource>\n",
			fixture.Cols, fixture.Rows, cols, rows)
	})
}

// fixtureVRT writes the fixture scene (fixture.tif) in dir and a rows x
// cols Float32 VRT named name over it whose bands' sources sources writes.
func fixtureVRT(t *testing.T, dir, name string, rows, cols int, sources func(b *strings.Builder, band int)) string {
	t.Helper()
	fixture.Scene(t, filepath.Join(dir, "fixture.tif"), 5)
	var b strings.Builder
	fmt.Fprintf(&b, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n", cols, rows)
	for i := 1; i <= fixture.Bands; i++ {
		fmt.Fprintf(&b, "  <VRTRasterBand dataType=\"Float32\" band=\"%d\"><NoDataValue>%g</NoDataValue>\n", i, fixture.NoData)
		sources(&b, i)
		b.WriteString("  </VRTRasterBand>\n")
	}
	b.WriteString("</VRTDataset>\n")
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// leftovers lists the files of dir that a run must not leave behind.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || strings.Contains(n, "stage") || strings.Contains(n, "tmp") || strings.Contains(n, "lock") {
			out = append(out, n)
		}
	}
	return out
}

// TestSignalStops runs the real binary on a scene that takes minutes, sends
// it SIGINT, SIGTERM or SIGHUP once it is writing (its staging file exists) and, in
// one case, after a delay that lands inside a network call, and checks that
// it exits within 5 s with 128 + the signal, removes every temporary and
// leaves the earlier product byte for byte as it was.
func TestSignalStops(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	dir := t.TempDir()
	scene := bigFixtureScene(t, dir, 6144, 6144)
	old := []byte("an earlier product that must survive\n")
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		batch bool
		delay time.Duration // after the staging file appears
	}{
		{"classify SIGTERM", syscall.SIGTERM, false, 0},
		{"classify SIGHUP", syscall.SIGHUP, false, 0},
		{"classify SIGINT mid-network", syscall.SIGINT, false, 1500 * time.Millisecond},
		{"batch SIGTERM", syscall.SIGTERM, true, 300 * time.Millisecond},
		{"batch SIGINT", syscall.SIGINT, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "products")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			product := filepath.Join(out, "big.tif")
			if err := os.WriteFile(product, old, 0o644); err != nil {
				t.Fatal(err)
			}
			// --tile 1024: each network call takes a good part of a second or more.
			args := []string{"classify", "--model", modelPath, "--scene", scene, "--out", product, "--tile", "1024", "--backend", "go"}
			report := filepath.Join(t.TempDir(), "report.jsonl")
			if tc.batch {
				args = []string{"batch", "--model", modelPath, "--out-dir", out, "--force", "--tile", "1024", "--backend", "go",
					"--datetime", "2024-06-01", "--report", report, scene}
			}
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			started := false
			for deadline := time.Now().Add(2 * time.Minute); !started && time.Now().Before(deadline); {
				select {
				case err := <-done:
					t.Fatalf("pnec ended before it was signalled: %v\n%s", err, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
				matches, _ := filepath.Glob(filepath.Join(out, ".big.tif.*.stage.tif"))
				started = len(matches) > 0
			}
			if !started {
				cmd.Process.Kill()
				t.Fatalf("no staging file within 2 minutes\n%s", stderr.String())
			}
			time.Sleep(tc.delay)
			t0 := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var werr error
			select {
			case werr = <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running 10 s after %v\n%s", tc.sig, stderr.String())
			}
			took := time.Since(t0)
			t.Logf("stopped %s after the signal; stderr tail: %q", took.Round(time.Millisecond), tail(stderr.String(), 200))
			if took > 5*time.Second {
				t.Errorf("took %s to stop after %v, want <= 5 s", took, tc.sig)
			}
			code := -1
			if ee, ok := werr.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if want := 128 + int(tc.sig); code != want {
				t.Errorf("exit status %d (%v), want %d", code, werr, want)
			}
			if !strings.Contains(stderr.String(), "stopped by") {
				t.Errorf("stderr does not say it stopped:\n%s", stderr.String())
			}
			if got := leftovers(t, out); len(got) > 0 {
				t.Errorf("left behind in the output directory: %v", got)
			}
			if b, err := os.ReadFile(product); err != nil || !bytes.Equal(b, old) {
				t.Errorf("earlier product changed: %q, %v", b, err)
			}
			// A batch that stops in time reports the scene as stopped (it is
			// not the scene's fault), naming the signal.
			if b, err := os.ReadFile(report); tc.batch && err == nil && len(b) > 0 {
				if !strings.Contains(string(b), `"status":"stopped"`) || strings.Contains(string(b), `"status":"failed"`) ||
					!strings.Contains(string(b), "signal "+tc.sig.String()) {
					t.Errorf("report does not say the scene was stopped by %v:\n%s", tc.sig, b)
				}
			} else if tc.batch {
				t.Logf("no report line (the batch did not return within the grace): %v", err)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

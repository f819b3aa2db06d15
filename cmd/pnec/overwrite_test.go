package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/matwrite"
)

// fileSum is the SHA-256 of a file's content ("" when it cannot be read).
func fileSum(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestOutputIsInputRefused: an output that resolves to one of the command's
// inputs (the same path, a symbolic link, a hard link, a VRT's source, a
// source STAC Item in the output directory) is refused before any work with
// one line naming both paths, and every input is left as it was (each of
// these destroyed the input with exit status 0 before).
func TestOutputIsInputRefused(t *testing.T) {
	pnecBinary(t) // skips with -short
	modelSrc := fixture.ModelFile(t)
	type tc struct {
		name string
		// setup makes the inputs in dir and returns the arguments, the
		// paths the error line must name and the inputs to check.
		setup func(t *testing.T, dir string) (args, names, inputs []string)
	}
	copyModel := func(t *testing.T, dir string) string {
		b, err := os.ReadFile(modelSrc)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "m.pnec")
		os.WriteFile(p, b, 0o644)
		return p
	}
	// batchInputDir is the batch cases' set-up: a copy of the model
	// outside d and the folder d/in holding the good scene.
	batchInputDir := func(t *testing.T, d string) (model, in, scene string) {
		model = copyModel(t, t.TempDir())
		in = filepath.Join(d, "in")
		os.Mkdir(in, 0o755)
		return model, in, goodScene(t, in)
	}
	classify := func(model, scene, out string, extra ...string) []string {
		return append([]string{"classify", "--quiet", "--model", model, "--scene", scene, "--out", out}, extra...)
	}
	trainArgs := func(scene, labels, out string, extra ...string) []string {
		return append(append([]string{"train", "--quiet", "--scene", scene, "--labels", labels, "--out", out, "--epochs", "2"}, tinyFlags...), extra...)
	}
	cases := []tc{
		{"classify out is the scene", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			return classify(m, s, s), []string{s}, []string{s, m}
		}},
		{"classify positional output is the input", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			return []string{"classify", "--quiet", "--model", m, s, s}, []string{s}, []string{s, m}
		}},
		// The lock file is taken and removed: a scene at its path was
		// deleted with exit status 0.
		{"classify scene is the output's lock file", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			lock := filepath.Join(d, ".out.pnec-lock")
			os.Rename(s, lock)
			return classify(m, lock, filepath.Join(d, "out.tif")), []string{lock, "not a pnec lock file"}, []string{lock, m}
		}},
		{"classify out is the model", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			return classify(m, s, m), []string{m}, []string{s, m}
		}},
		{"classify out is a symlink to the scene", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			l := filepath.Join(d, "link.tif")
			os.Symlink(s, l)
			return classify(m, s, l), []string{l, s}, []string{s, m}
		}},
		{"classify out is a hard link to the scene", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			l := filepath.Join(d, "hard.tif")
			if err := os.Link(s, l); err != nil {
				t.Fatal(err)
			}
			return classify(m, s, l), []string{l, s}, []string{s, m}
		}},
		{"classify style beside the product is the model", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			qml := filepath.Join(d, "map.qml")
			os.Rename(m, qml)
			return classify(qml, s, filepath.Join(d, "map.tif")), []string{qml}, []string{s, qml}
		}},
		{"classify float32 reliability file is the scene", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			rel := filepath.Join(d, "map.reliability.tif")
			os.Rename(s, rel)
			return classify(m, rel, filepath.Join(d, "map.tif"), "--reliability", "float32"), []string{rel}, []string{rel, m}
		}},
		{"classify out is a VRT's source", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			vrt := filepath.Join(d, "mosaic.vrt")
			var b strings.Builder
			fmt.Fprintf(&b, `<VRTDataset rasterXSize="%d" rasterYSize="%d">`+"\n", fixture.Cols, fixture.Rows)
			for i := 1; i <= fixture.Bands; i++ {
				fmt.Fprintf(&b, `  <VRTRasterBand dataType="Float32" band="%d"><SimpleSource><SourceFilename relativeToVRT="1">good.tif</SourceFilename><SourceBand>%d</SourceBand></SimpleSource></VRTRasterBand>`+"\n", i, i)
			}
			b.WriteString("</VRTDataset>\n")
			os.WriteFile(vrt, []byte(b.String()), 0o644)
			return classify(m, vrt, s), []string{s}, []string{s, vrt, m}
		}},
		{"classify mask is a VRT of the output", func(t *testing.T, d string) ([]string, []string, []string) {
			// The earlier product, and a mask made from it with
			// gdal_translate -of VRT: writing the product would replace
			// what the mask reads (exit 0 before).
			m, s := copyModel(t, d), goodScene(t, d)
			out := filepath.Join(d, "out.tif")
			b, _ := os.ReadFile(s)
			os.WriteFile(out, b, 0o644)
			mask := filepath.Join(d, "mask.vrt")
			if o, err := exec.Command("gdal_translate", "-q", "-of", "VRT", "-b", "1", out, mask).CombinedOutput(); err != nil {
				t.Skipf("gdal_translate: %v %s", err, o)
			}
			return classify(m, s, out, "--mask", mask), []string{out, "the mask reads"}, []string{s, out, mask, m}
		}},
		{"classify scene is a VRT of a VRT of the output", func(t *testing.T, d string) ([]string, []string, []string) {
			// GDAL's file list names the first level only.
			m, s := copyModel(t, d), goodScene(t, d)
			out := filepath.Join(d, "out.tif")
			b, _ := os.ReadFile(s)
			os.WriteFile(out, b, 0o644)
			inner, outer := filepath.Join(d, "inner.vrt"), filepath.Join(d, "outer.vrt")
			for _, p := range [][2]string{{out, inner}, {inner, outer}} {
				if o, err := exec.Command("gdalbuildvrt", "-q", p[1], p[0]).CombinedOutput(); err != nil {
					t.Skipf("gdalbuildvrt: %v %s", err, o)
				}
			}
			return classify(m, outer, out), []string{out, "the scene reads"}, []string{out, inner, outer, m}
		}},
		{"batch mask is a VRT of a product", func(t *testing.T, d string) ([]string, []string, []string) {
			m, in, a := batchInputDir(t, d)
			out := filepath.Join(d, "out")
			os.Mkdir(out, 0o755)
			prod := filepath.Join(out, "good.tif") // the scene's product of an earlier run
			b, _ := os.ReadFile(a)
			os.WriteFile(prod, b, 0o644)
			mask := filepath.Join(d, "aoi.vrt")
			if o, err := exec.Command("gdal_translate", "-q", "-of", "VRT", "-b", "1", prod, mask).CombinedOutput(); err != nil {
				t.Skipf("gdal_translate: %v %s", err, o)
			}
			return []string{"batch", "--quiet", "--model", m, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"), "--mask", mask, in},
				[]string{prod, "the mask reads"}, []string{a, prod, mask, m}
		}},
		{"classify out is the quality mask", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			qm := filepath.Join(d, "clouds.tif")
			b, _ := os.ReadFile(s)
			os.WriteFile(qm, b, 0o644)
			return classify(m, s, qm, "--quality-mask", qm+":1"), []string{qm}, []string{s, qm, m}
		}},
		{"train out is the scene", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			return trainArgs(s, l, s), []string{s}, []string{s, l}
		}},
		{"train out is the labels", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			return trainArgs(s, l, l), []string{l}, []string{s, l}
		}},
		{"train out is the training mask", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			mask := filepath.Join(d, "train.tif")
			b, _ := os.ReadFile(l)
			os.WriteFile(mask, b, 0o644)
			return trainArgs(s, l, mask, "--train-mask", mask), []string{mask}, []string{s, l, mask}
		}},
		{"train out is a symlink to the labels", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			link := filepath.Join(d, "model.pnec")
			os.Symlink(l, link)
			return trainArgs(s, l, link), []string{link, l}, []string{s, l}
		}},
		{"model-item out is the model", func(t *testing.T, d string) ([]string, []string, []string) {
			m := copyModel(t, d)
			return []string{"model-item", "--model", m, "--out", m}, []string{m}, []string{m}
		}},
		{"model-item out is a symlink to the model", func(t *testing.T, d string) ([]string, []string, []string) {
			m := copyModel(t, d)
			l := filepath.Join(d, "item.json")
			os.Symlink(m, l)
			return []string{"model-item", "--model", m, "--out", l}, []string{l, m}, []string{m}
		}},
		{"model-item out is the training scene", func(t *testing.T, d string) ([]string, []string, []string) {
			m, s := copyModel(t, d), goodScene(t, d)
			return []string{"model-item", "--model", m, "--training-scene", s, "--out", s}, []string{s}, []string{m, s}
		}},
		{"synth out is the layout", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			return []string{"synth", "--layout", l, "--spectra", s + "," + l, "--bands", "6", "--out", l}, []string{l}, []string{s, l}
		}},
		{"synth out is the spectra source", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			return []string{"synth", "--layout", "procedural:32x32", "--spectra", s + "," + l, "--bands", "6", "--out", s}, []string{s}, []string{s, l}
		}},
		{"synth labels-out is a link to out", func(t *testing.T, d string) ([]string, []string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			out := filepath.Join(d, "new.tif")
			link := filepath.Join(d, "link.tif")
			os.Symlink(out, link)
			return []string{"synth", "--layout", "procedural:32x32", "--spectra", s + "," + l, "--bands", "6", "--out", out, "--labels-out", link}, []string{out, link}, []string{s, l}
		}},
		{"import out is the cube", func(t *testing.T, d string) ([]string, []string, []string) {
			mat := filepath.Join(d, "cube.mat")
			f, err := os.Create(mat)
			if err != nil {
				t.Fatal(err)
			}
			if err := matwrite.WriteCube(f, "X", 6, 5, 4, matwrite.MiUINT16, false, 1); err != nil {
				t.Fatal(err)
			}
			f.Close()
			return []string{"import", "mat", "--cube", mat + ":X", "--out", mat}, []string{mat}, []string{mat}
		}},
		{"batch out-dir holds the scenes", func(t *testing.T, d string) ([]string, []string, []string) {
			m, in, a := batchInputDir(t, d)
			return []string{"batch", "--quiet", "--model", m, "--out-dir", in, "--report", filepath.Join(d, "r.jsonl"), in}, []string{a}, []string{a, m}
		}},
		{"batch product Item is the source Item", func(t *testing.T, d string) ([]string, []string, []string) {
			m := copyModel(t, t.TempDir())
			os.Mkdir(filepath.Join(d, "data"), 0o755)
			s := goodScene(t, filepath.Join(d, "data"))
			item := filepath.Join(d, "flight7.json")
			os.WriteFile(item, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"flight7","geometry":null,"properties":{"datetime":null},"links":[],"assets":{"hsi":{"href":"data/good.tif","roles":["data"]}}}`), 0o644)
			return []string{"batch", "--quiet", "--model", m, "--out-dir", d, "--report", filepath.Join(t.TempDir(), "r.jsonl"), item},
				[]string{item}, []string{item, s, m}
		}},
		{"batch product is the quality mask", func(t *testing.T, d string) ([]string, []string, []string) {
			m, in, a := batchInputDir(t, d)
			out := filepath.Join(d, "out")
			os.Mkdir(out, 0o755)
			qm := filepath.Join(out, "good.tif") // where the scene's product goes
			b, _ := os.ReadFile(a)
			os.WriteFile(qm, b, 0o644)
			return []string{"batch", "--quiet", "--model", m, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"), "--quality-mask", qm, in},
				[]string{qm}, []string{a, qm, m}
		}},
		{"batch report is a scene", func(t *testing.T, d string) ([]string, []string, []string) {
			m, in, a := batchInputDir(t, d)
			return []string{"batch", "--quiet", "--model", m, "--out-dir", filepath.Join(d, "out"), "--report", a, in}, []string{a}, []string{a, m}
		}},
		{"batch collection is the input collection", func(t *testing.T, d string) ([]string, []string, []string) {
			m := copyModel(t, t.TempDir())
			s := goodScene(t, d)
			item := filepath.Join(d, "item.json")
			os.WriteFile(item, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"x","geometry":null,"properties":{"datetime":null},"links":[],"assets":{"hsi":{"href":"good.tif","roles":["data"]}}}`), 0o644)
			cat := filepath.Join(d, "collection.json")
			os.WriteFile(cat, []byte(`{"type":"Collection","stac_version":"1.0.0","id":"c","description":"c","license":"proprietary","extent":{"spatial":{"bbox":[[0,0,1,1]]},"temporal":{"interval":[[null,null]]}},"links":[{"rel":"item","href":"item.json"}]}`), 0o644)
			return []string{"batch", "--quiet", "--model", m, "--out-dir", filepath.Join(d, "out"), "--report", filepath.Join(t.TempDir(), "r.jsonl"), "--stac-collection", cat, cat},
				[]string{cat}, []string{cat, item, s, m}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args, names, inputs := c.setup(t, dir)
			sums := map[string]string{}
			for _, p := range inputs {
				sums[p] = fileSum(p)
			}
			r := runPnec(t, 2*time.Minute, args...)
			t.Logf("exit %d in %s: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
			if r.code == 0 || r.code == 2 || strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("exit status %d, want 1 without a panic", r.code)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "pnec: ") {
				t.Errorf("stderr has %d lines, want one 'pnec: ...' line", len(lines))
			}
			for _, n := range names {
				if !strings.Contains(lines[0], n) {
					t.Errorf("error does not name %s", n)
				}
			}
			if r.elapsed > 20*time.Second {
				t.Errorf("took %s: the refusal must come before any work", r.elapsed.Round(time.Millisecond))
			}
			for _, p := range inputs {
				if got := fileSum(p); got != sums[p] {
					t.Errorf("input %s changed", p)
				}
			}
		})
	}
}

// TestInputsNamedLikeTemporariesStay: scenes and masks named like the
// temporaries of the product being written (pnec's own naming, and the
// unmarked names of earlier versions) are inputs, and no sweep of stale
// temporaries removes them (".out.tif.123.tmp.tif" as the scene
// was deleted before it was read, and as the mask after).
func TestInputsNamedLikeTemporariesStay(t *testing.T) {
	pnecBinary(t) // skips with -short
	modelPath := fixture.ModelFile(t)
	check := func(t *testing.T, r runResult, inputs map[string]string) {
		t.Helper()
		if r.code != 0 {
			t.Errorf("exit %d, want 0:\n%s", r.code, r.stderr)
		}
		for p, sum := range inputs {
			if fileSum(p) != sum {
				t.Errorf("input %s was removed or changed", filepath.Base(p))
			}
		}
	}
	for _, names := range [][2]string{{".out.tif.123.tmp.tif", ".out.tif.9.stage.tif"}, {".out.tif.pnec-123.tmp.tif", ".out.tif.pnec-9.stage.tif"}} {
		t.Run("classify "+names[0], func(t *testing.T) {
			dir := t.TempDir()
			scene, mask := filepath.Join(dir, names[0]), filepath.Join(dir, names[1])
			os.Rename(goodScene(t, dir), scene)
			goodScene(t, dir)
			os.Rename(filepath.Join(dir, "good.tif"), mask) // the scene's copy: inside where band 1 is not 0
			inputs := map[string]string{scene: fileSum(scene), mask: fileSum(mask)}
			r := runPnec(t, 2*time.Minute, "classify", "--quiet", "--model", modelPath, "--scene", scene, "--mask", mask, "--out", filepath.Join(dir, "out.tif"))
			check(t, r, inputs)
			if _, err := os.Stat(filepath.Join(dir, "out.tif")); err != nil {
				t.Errorf("no product: %v", err)
			}
		})
	}
	t.Run("batch", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		os.MkdirAll(filepath.Join(dir, "in"), 0o755)
		os.MkdirAll(out, 0o755)
		a := filepath.Join(dir, "in", "a.tif")
		os.Rename(goodScene(t, dir), a)
		odd := filepath.Join(out, ".a.tif.pnec-1.stage.tif") // a scene in out-dir named like a's temporary
		os.Rename(goodScene(t, dir), odd)
		inputs := map[string]string{a: fileSum(a), odd: fileSum(odd)}
		r := runPnec(t, 2*time.Minute, "batch", "--quiet", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(dir, "r.jsonl"),
			"--datetime", "2024-06-01", a, odd)
		check(t, r, inputs)
	})
}

package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/golden"
)

// TestOutputsGolden pins what the commands write for one small scene: the
// model file, the products of a whole-image and a tiled classification
// (class and reliability pixels and the product metadata), the batch's STAC
// Item and Collection, the model's Item, pnec info's report and pnec tiles'
// plan. Restructuring the code must leave every one of them as it is; a
// deliberate change of an output is recorded with `go test ./cmd/pnec -run
// OutputsGolden -update` and shows in the diff of
// testdata/outputs.golden.json. Values that change from run to run (times,
// durations, temporary paths, the version) are left out or replaced by a
// placeholder, so the file holds what the code decides.
func TestOutputsGolden(t *testing.T) {
	bin := pnecBinary(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	scene := filepath.Join(in, "scene.tif")
	if err := fixture.WriteScene(scene, 3); err != nil {
		t.Fatal(err)
	}
	_, labels := fixture.SceneData(3)
	lab := make([]float32, len(labels))
	for i, v := range labels {
		lab[i] = float32(v)
	}
	labelsPath := filepath.Join(dir, "labels.tif")
	writeTyped(t, labelsPath, fixture.Rows, fixture.Cols, 1, geo.Byte, nil, lab)

	modelPath := filepath.Join(dir, "m.pnec")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOMLX_BACKEND=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pnec %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("train", "--scene", scene, "--labels", labelsPath, "--out", modelPath, "--backend", "go", "-q",
		"--epochs", "12", "--hidden", "32", "--warmup", "3", "--seed", "7", "--train-per-class", "10")
	run("classify", "--model", modelPath, "--scene", scene, "--out", filepath.Join(dir, "whole.tif"), "--backend", "go", "-q")
	run("classify", "--model", modelPath, "--scene", scene, "--out", filepath.Join(dir, "tiled.tif"), "--backend", "go", "-q",
		"--tile", "16", "--overlap", "4", "--probabilities", "recovered")
	run("batch", "--model", modelPath, "--out-dir", filepath.Join(dir, "out"), "--stac-collection", filepath.Join(dir, "out", "collection.json"),
		"--backend", "go", "-q", "--report", filepath.Join(dir, "report.jsonl"), in)
	run("model-item", "--model", modelPath, "--out", filepath.Join(dir, "model-item.json"))

	got := map[string]any{}
	var modelSum string
	got["model"], modelSum = modelSummary(t, modelPath, strings.NewReplacer(dir, "DIR"))
	// The model file records its training time, so its checksum (in the
	// products, the Items, the model Item's id) differs from run to run: it
	// is replaced by MODEL, and the model's content pinned by modelSummary.
	norm := strings.NewReplacer(dir, "DIR", modelSum, "MODEL", modelSum[:12], "MODEL")
	for _, p := range []string{"whole.tif", "tiled.tif", "tiled.probabilities.tif", "out/scene.tif"} {
		got[p] = rasterSummary(t, filepath.Join(dir, p), norm)
	}
	for _, p := range []string{"out/scene.json", "out/collection.json"} {
		got[p] = jsonFile(t, filepath.Join(dir, p), norm, nil)
	}
	// A model's Item is dated by its training.
	for _, p := range []string{"model-item.json", "m.pnec.json"} {
		got[p] = jsonFile(t, filepath.Join(dir, p), norm, map[string]bool{"datetime": true})
	}
	info := exec.Command(bin, "info", "--json", scene)
	out, err := info.Output()
	if err != nil {
		t.Fatalf("pnec info: %v", err)
	}
	got["info"] = normalisedJSON(t, out, norm, nil)
	tiles := exec.Command(bin, "tiles", "--model", modelPath, "--scene", scene, "--tile", "16", "--overlap", "4")
	if out, err = tiles.Output(); err != nil {
		t.Fatalf("pnec tiles: %v", err)
	}
	got["tiles"] = strings.Split(strings.TrimSpace(norm.Replace(string(out))), "\n")

	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "outputs.golden.json", append(b, '\n'))
}

// modelSummary is a model file's JSON header (volatile values replaced,
// norm applied) and a digest of its numbers, and the model's checksum: the
// file is the magic, the header's length (uint64, little-endian), the
// header, the numbers, and the SHA-256 of all that (the checksum products
// and Items name).
func modelSummary(t *testing.T, path string, norm *strings.Replacer) (summary map[string]any, sum string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 16+sha256.Size {
		t.Fatalf("%s: %d bytes", path, len(b))
	}
	n := binary.LittleEndian.Uint64(b[8:16])
	end := uint64(len(b) - sha256.Size)
	if end < 16+n {
		t.Fatalf("%s: header of %d bytes in a file of %d", path, n, len(b))
	}
	numbers := sha256.Sum256(b[16+n : end])
	return map[string]any{
		"magic":   string(b[:8]),
		"header":  normalisedJSON(t, b[16:16+n], norm, nil),
		"numbers": hex.EncodeToString(numbers[:]),
	}, hex.EncodeToString(b[end:])
}

// volatileKey: metadata and JSON keys whose values differ between two runs
// of the same code (times, durations, the version the binary was built as).
func volatileKey(k string) bool {
	k = strings.ToLower(k)
	for _, v := range []string{"time", "created", "updated", "seconds", "elapsed", "version", "duration"} {
		if strings.Contains(k, v) && k != "datetime" {
			return true
		}
	}
	// A file's checksum and size cover the times it records; its pixels
	// and metadata are pinned apart.
	return strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "_s") || k == "file:checksum" || k == "file:size"
}

// rasterSummary is a raster's pixels (a digest per band) and its metadata
// (gdalinfo -json's metadata domains, volatile keys replaced).
func rasterSummary(t *testing.T, path string, norm *strings.Replacer) map[string]any {
	t.Helper()
	out, err := exec.Command("gdalinfo", "-json", "-checksum", "-mdd", "all", path).Output()
	if err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	var info struct {
		Size     []int                        `json:"size"`
		Metadata map[string]any               `json:"metadata"`
		Bands    []map[string]json.RawMessage `json:"bands"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	bands := []string{}
	for _, b := range info.Bands {
		bands = append(bands, string(b["checksum"])+" "+string(b["description"])+" "+string(b["noDataValue"]))
	}
	md := map[string]any{}
	for domain, v := range info.Metadata {
		if domain == "DERIVED_SUBDATASETS" {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var lines []string
		for _, k := range keys {
			val := fmt.Sprint(m[k])
			if volatileKey(k) {
				val = "VOLATILE"
			}
			lines = append(lines, k+"="+norm.Replace(val))
		}
		md[domain] = lines
	}
	return map[string]any{"size": info.Size, "bands": bands, "metadata": md}
}

func jsonFile(t *testing.T, path string, norm *strings.Replacer, volatile map[string]bool) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return normalisedJSON(t, b, norm, volatile)
}

// normalisedJSON decodes a JSON document with volatile values replaced and
// norm applied to its strings; volatile names further keys to replace.
func normalisedJSON(t *testing.T, b []byte, norm *strings.Replacer, volatile map[string]bool) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if volatileKey(k) || volatile[k] {
					x[k] = "VOLATILE"
					continue
				}
				x[k] = walk(e)
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
			return x
		case string:
			return norm.Replace(x)
		}
		return v
	}
	return walk(v)
}

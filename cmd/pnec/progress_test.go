package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestClassifyProgressLines: a classify whose stderr is not a terminal (a
// log, a batch system's output file) writes one line per tile with the
// pixels done, pixels/s and the time left, and ends with a summary that
// gives pixels/s and the stages' shares.
func TestClassifyProgressLines(t *testing.T) {
	bin := pnecBinary(t)
	modelPath, scene, dir := classifyFixture(t)
	cmd := exec.Command(bin, "classify", "--model", modelPath, "--scene", scene, "--out", filepath.Join(dir, "p.tif"),
		"--tile", "16", "--overlap", "4", "--backend", "go")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("classify: %v\n%s", err, stderr.String())
	}
	tileLine := regexp.MustCompile(`^classify \S*scene\.tif: tile (\d+)/(\d+), [0-9.]+[kMG]? of [0-9.]+[kMG]? px \([0-9.]+%\), [0-9.]+[kMG]? px/s(, ETA \S+)?$`)
	var tiles []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if m := tileLine.FindStringSubmatch(l); m != nil {
			tiles = append(tiles, m[1]+"/"+m[2])
		}
	}
	if len(tiles) < 4 {
		t.Fatalf("want a progress line per tile (at least 4 tiles of 16 px), got %d:\n%s", len(tiles), stderr.String())
	}
	for i, tl := range tiles {
		n := strings.SplitN(tl, "/", 2)
		if n[0] != strconv.Itoa(i+1) || n[1] != strconv.Itoa(len(tiles)) {
			t.Errorf("line %d says tile %s, want %d/%d", i+1, tl, i+1, len(tiles))
		}
	}
	sum := stdout.String()
	for _, want := range []string{"px/s", "read ", "network ", "stitch+recovery ", "write ", "of the wall time"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}


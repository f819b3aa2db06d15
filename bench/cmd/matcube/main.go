// Command matcube writes a synthetic MATLAB v5 hyperspectral cube (class
// double stored as uint16 or int16, compressed or not) for benchmarks of
// 'pnec import mat', e.g. a Pavia-University-sized file:
//
//	go run ./bench/cmd/matcube -out /tmp/pavia.mat -rows 610 -cols 340 -bands 103
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/pnec/pnec/internal/matwrite"
)

func main() {
	out := flag.String("out", "", "output .mat `PATH`")
	name := flag.String("var", "cube", "variable name")
	rows := flag.Int("rows", 610, "rows")
	cols := flag.Int("cols", 340, "columns")
	bands := flag.Int("bands", 103, "bands")
	stored := flag.String("type", "uint16", "on-disk type: uint16 or int16")
	compress := flag.Bool("compress", true, "write a miCOMPRESSED element (MATLAB -v7)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := run(*out, *name, *rows, *cols, *bands, *stored, *compress, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "matcube:", err)
		os.Exit(1)
	}
}

func run(out, name string, rows, cols, bands int, stored string, compress bool, seed uint64) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	if rows <= 0 || cols <= 0 || bands <= 0 {
		return fmt.Errorf("size %dx%dx%d: want positive rows, cols and bands", rows, cols, bands)
	}
	typ := uint32(matwrite.MiUINT16)
	switch stored {
	case "uint16":
	case "int16":
		typ = matwrite.MiINT16
	default:
		return fmt.Errorf("-type %s: want uint16 or int16", stored)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := matwrite.WriteCube(w, name, rows, cols, bands, typ, compress, seed); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

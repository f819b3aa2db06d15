package model

import (
	"context"
	"fmt"
	"time"
)

// Compiled is one shape Precompile compiled.
type Compiled struct {
	CallShape
	Seconds float64 // compilation and the first run, wall
}

// Precompile compiles m's prediction graphs on backend for each shape by
// running it once on a blank scene of that shape, so that the compile
// cache holds them (a node image built with them starts warm). It returns
// each shape's time; the first error stops it.
func Precompile(ctx context.Context, m *Model, backend string, shapes []CallShape) ([]Compiled, error) {
	p, err := NewPredictor(m, backend)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var out []Compiled
	for _, sh := range shapes {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		rows, cols := sh.Rows, sh.Cols
		if rows < 1 || cols < 1 {
			return out, fmt.Errorf("precompile: shape %dx%d: rows and columns must be positive", rows, cols)
		}
		s := Scene{Rows: rows, Cols: cols, Bands: m.Bands(), Data: make([]float32, rows*cols*m.Bands())}
		t0 := time.Now()
		call := p.Predict
		if sh.Recovered {
			call = p.PredictRecovered
		}
		if _, err := call(ctx, s); err != nil {
			return out, fmt.Errorf("precompile %v: %w", sh, err)
		}
		out = append(out, Compiled{CallShape: sh, Seconds: time.Since(t0).Seconds()})
	}
	return out, nil
}

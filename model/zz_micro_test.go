package model

import (
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph"
)

func TestZZMicro(t *testing.T) {
	if os.Getenv("PNEC_PROFILE") == "" {
		t.Skip()
	}
	b := testBackend(t)
	mk := func(dims ...int) any {
		v := make([]float32, numel(dims))
		for i := range v {
			v[i] = float32(i%7) * 0.1
		}
		return tensorOf(v, dims...)
	}
	cases := []struct {
		name string
		args []any
		fn   func(in []*Node) *Node
	}{
		{"bmm chsr,chrp 816x64^3", []any{mk(204, 4, 64, 64), mk(204, 4, 64, 64)}, func(in []*Node) *Node { return Einsum("chsr,chrp->chsp", in[0], in[1]) }},
		{"bmm as big reshape 816", []any{mk(816, 64, 64), mk(816, 64, 64)}, func(in []*Node) *Node { return Einsum("bsr,brp->bsp", in[0], in[1]) }},
		{"exp 3.3M", []any{mk(204, 4, 64, 64)}, func(in []*Node) *Node { return Exp(in[0]) }},
		{"mul bcast 3.3M", []any{mk(204, 4, 64, 64), mk(204, 1, 64, 64)}, func(in []*Node) *Node { return Mul(in[0], in[1]) }},
		{"mul same 3.3M", []any{mk(204, 4, 64, 64), mk(204, 4, 64, 64)}, func(in []*Node) *Node { return Mul(in[0], in[1]) }},
		{"transpose 3.3M", []any{mk(204, 64, 4, 64)}, func(in []*Node) *Node { return Transpose(in[0], 1, 2) }},
		{"sigmoid 3.3M", []any{mk(13005, 256)}, func(in []*Node) *Node { return Sigmoid(in[0]) }},
		{"matmul 13005x128x548", []any{mk(13005, 128), mk(128, 548)}, func(in []*Node) *Node { return MatMul(in[0], in[1]) }},
	}
	for _, c := range cases {
		e, err := NewExec(b, func(in []*Node) *Node { return c.fn(in) })
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Call(c.args...)
		if err != nil {
			t.Fatal(err)
		}
		out[0].FinalizeAll()
		c0, w0 := cpuSeconds(), time.Now()
		for range 5 {
			out, _ := e.Call(c.args...)
			out[0].FinalizeAll()
		}
		fmt.Printf("%-28s wall %.4f cpu %.4f\n", c.name, time.Since(w0).Seconds()/5, (cpuSeconds()-c0)/5)
	}
}

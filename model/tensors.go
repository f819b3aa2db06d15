package model

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

func shapeOf(dt dtypes.DType, dims ...int) shapes.Shape { return shapes.Make(dt, dims...) }

func tensorOf[T float32 | float64 | int32](data []T, dims ...int) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// float64s converts v.
func float64s(v []float32) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}

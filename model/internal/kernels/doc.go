// Package kernels holds the model's own CPU kernels, plain Go (the
// GOEXPERIMENT=simd archsimd vectors) and assembly, apart from the network
// and free of GoMLX:
//
//   - FullRes, the paper encoder's full-resolution stage (1x1 embedding,
//     GroupNorm, SiLU, Winograd 3x3 convolution, MaxPool, GELU, AvgPool),
//     forward and backward, outside the GoMLX graph (fullres_simd_amd64.go);
//   - sgemm, the single-precision matrix product FullRes runs on, with
//     AVX-512 and AVX2 micro-kernels (gemm_amd64.s) and right-hand
//     matrices packed for them (packB);
//   - the dot products of the spectral reliability score: a pixel's
//     spectrum against a band-major table of unit reference spectra
//     (DotsScalar, DotsSIMD, Dots4SIMD, Dots8);
//   - the network's input channels of one pixel (AddStretch, SumNonNaN,
//     AddShape), which the model's input modes are made of.
//
// Each kernel has a fallback where its instructions are missing: without
// GOEXPERIMENT=simd on amd64 (the *_nosimd.go files) FullResAvailable is
// false and FullRes is not built (the model keeps the stage in the graph),
// and the dot and input kernels are scalar loops; without AVX2 and FMA
// FullResAvailable is false and sgemm takes its scalar loop. The model
// decides which path runs (model/fullres_select.go) and is the only
// importer: the package sits under model/internal.
package kernels

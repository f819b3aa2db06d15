// Package kernels holds the model's own CPU kernels, plain Go (the
// GOEXPERIMENT=simd archsimd vectors) and assembly, apart from the network
// and free of GoMLX:
//
//   - FullRes, the paper encoder's full-resolution stage (1x1 embedding,
//     GroupNorm, SiLU, Winograd 3x3 convolution, MaxPool, GELU, AvgPool),
//     forward and backward, outside the GoMLX graph (fullres_simd_amd64.go);
//   - sgemm, the single-precision matrix product FullRes runs on, with an
//     AVX-512 micro-kernel (gemm_amd64.s);
//   - the dot products of the spectral reliability score: a pixel's
//     spectrum against a band-major table of unit reference spectra
//     (DotsScalar, DotsSIMD, Dots4SIMD).
//
// Each kernel has a fallback where its instructions are missing: without
// GOEXPERIMENT=simd on amd64 (the *_nosimd.go files) FullResAvailable is
// false and FullRes is not built (the model keeps the stage in the graph),
// and the dot kernels are the scalar loop; without AVX-512 (or with
// GODEBUG=cpu.avx512f=off) FullResAvailable is false and sgemm takes its
// scalar loop. The model decides which path runs (model/fullres_select.go)
// and is the only importer: the package sits under model/internal.
package kernels

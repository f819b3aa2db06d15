// Package synth generates hyperspectral scenes for tests and benchmarks: a
// label layout (a real ground-truth map or a procedural one of any size)
// filled with class-conditional spectra estimated from a real scene
// (SalinasA or JasperRidge), with within-class variability, linear mixing
// across class boundaries and sensor noise.
//
// The generation logic (layouts, spectral statistics, pixel synthesis) is
// pure Go on plain slices; files are read through matfile and geo and
// written through geo, so the package never touches GDAL directly.
//
// Everything is deterministic for a seed: each row draws from its own PCG
// stream seeded by (seed, row), so the output does not depend on how rows are
// split between strips or goroutines.
package synth

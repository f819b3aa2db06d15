// Package spectral compares the spectral identity of a scene's bands with a
// model's and says how to make the model's bands from the scene's: the same
// bands picked out (a selection), or each model band computed from the
// scene's bands through Gaussian spectral response functions (a resampling
// matrix of model bands x scene bands). It also checks that a scene's
// radiometric quantity and scale match the model's (Radiometry).
//
// It is pure arithmetic on plain slices, with no I/O: package geo reads the
// band centres, widths and bad-band flags a scene declares into a BandSet,
// package model records the training scene's, and package processor (and
// evaluation) call Match and hand the resulting Plan to the reader.
//
// Band indices are 0-based; messages name bands 1-based ("band 12"), as GDAL
// and the sensors' documents do. Wavelengths and widths are in nanometres.
package spectral

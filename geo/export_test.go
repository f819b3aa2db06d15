package geo

// RerunTest is rerunTest for the external tests.
var RerunTest = rerunTest

// ReadDecimated is the decimated read that ValidFractionEstimate makes of
// large scenes (nearest sampling of w into bufCols x bufRows), for the
// external tests.
func (s *Scene) ReadDecimated(w Window, bufCols, bufRows int) ([]float32, []bool, error) {
	return s.read(&s.cur, w, bufCols, bufRows, true)
}

// SetMaxChunkBytes sets the bound on a cube array's decoded chunk for a
// test and returns the function restoring it.
func SetMaxChunkBytes(v float64) (restore func()) {
	old := maxChunkBytes
	maxChunkBytes = v
	return func() { maxChunkBytes = old }
}

package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/pnec/pnec/version"
)

// graphKey names a compiled prediction graph: the model's graph (its
// configuration, bands and classes, pnec's version) and the input shape.
func (m *Model) graphKey(rows, cols int) string {
	b, _ := json.Marshal(struct {
		V           string
		C           Config
		Bands, K    int
		Rows, Cols  int
		Stats, Prep bool
	}{version.String, m.meta.Config, m.meta.Bands, len(m.meta.Classes), rows, cols, len(m.meta.GroupNormStats) > 0, true})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

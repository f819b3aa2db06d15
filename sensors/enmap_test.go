package sensors

import (
	"math"
	"testing"
)

// FuzzParseEnMAPMetadata: any document parses or fails without a panic; a
// parsed one has one centre, width, gain, offset and statistic per band,
// every centre positive.
func FuzzParseEnMAPMetadata(f *testing.F) {
	f.Add(`<level_X><specific><bandCharacterisation><bandID number="1"><wavelengthCenterOfBand>418.4</wavelengthCenterOfBand><FWHMOfBand>6.5</FWHMOfBand><GainOfBand>0.0001</GainOfBand><OffsetOfBand>0</OffsetOfBand></bandID></bandCharacterisation></specific><product><bandStatistics><bandID number="1"><stdDeviation>0</stdDeviation></bandID></bandStatistics></product></level_X>`)
	f.Add(`<a><bandCharacterisation><bandID number="2"><wavelengthCenterOfBand>1</wavelengthCenterOfBand></bandID></bandCharacterisation></a>`)
	f.Add(`<?xml version="1.0" encoding="ISO-8859-1"?><x/>`)
	f.Fuzz(func(t *testing.T, doc string) {
		md, err := parseEnMAPMetadata([]byte(doc))
		if err != nil {
			return
		}
		n := len(md.CentresNM)
		if n == 0 || len(md.FWHMNM) != n || len(md.Gains) != n || len(md.Offsets) != n || len(md.BandStdDev) != n {
			t.Fatalf("lengths %d %d %d %d %d", n, len(md.FWHMNM), len(md.Gains), len(md.Offsets), len(md.BandStdDev))
		}
		for _, c := range md.CentresNM {
			if !(c > 0) || math.IsInf(c, 0) {
				t.Fatalf("centre %g", c)
			}
		}
	})
}

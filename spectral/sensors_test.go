package spectral

import (
	"slices"
	"testing"
)

// TestSensorTables: every table is ascending with positive widths; EnMAP's
// has the product's 224 bands with the detectors interleaved in their
// overlap and no band in the deepest absorptions; PRISMA's slots are the
// product's 66 + 173 with 3 + 2 slots not in use.
func TestSensorTables(t *testing.T) {
	for _, s := range Sensors() {
		b := s.Bands
		if !b.HasCentres() || len(b.FWHMNM) != b.Bands || !slices.IsSorted(b.CentresNM) {
			t.Errorf("%s: %d bands, centres ascending %v", s.Name, b.Bands, slices.IsSorted(b.CentresNM))
		}
		for i := range b.Bands {
			if _, ok := b.FWHM(i); !ok {
				t.Errorf("%s band %d has no width", s.Name, i+1)
			}
		}
		if got, ok := SensorByName(s.Aliases[0]); !ok || got.Name != s.Name {
			t.Errorf("SensorByName(%q) = %q", s.Aliases[0], got.Name)
		}
	}
	c, w, vnir := EnMAPBands()
	if len(c) != 224 || len(w) != 224 {
		t.Fatalf("EnMAP: %d bands", len(c))
	}
	nv, interleaved := 0, false
	for i, v := range vnir {
		if v {
			nv++
		}
		if i > 0 && v && !vnir[i-1] {
			interleaved = true // a VNIR band after a SWIR band
		}
	}
	if nv != 91 || !interleaved {
		t.Errorf("EnMAP: %d VNIR bands, interleaved %v; want 91, interleaved", nv, interleaved)
	}
	for _, x := range c {
		if (x > 1391 && x < 1461) || (x > 1760 && x < 1939) {
			t.Errorf("EnMAP band at %g nm, in an absorption the product leaves out", x)
		}
	}
	if c[129] < 1330 || c[134] > 1391 {
		t.Errorf("EnMAP bands 130-135 at %g-%g nm, want the 1.38 um absorption's", c[129], c[134])
	}
	vn, _, sw, _ := PRISMASlots()
	if len(vn) != 66 || len(sw) != 173 || vn[0]+vn[1]+vn[2] != 0 || sw[171]+sw[172] != 0 || vn[3] == 0 || sw[170] == 0 {
		t.Errorf("PRISMA slots: %d VNIR, %d SWIR, first VNIR %v, last SWIR %v", len(vn), len(sw), vn[:4], sw[169:])
	}
}

// TestCommonBands: the EMIT bands EnMAP covers leave out EMIT's bands
// below EnMAP's first band and in EnMAP's absorptions (filled or left out
// of the product), and a model on them resamples from EnMAP's bands and
// from EMIT's own; a band EnMAP does not cover is refused by Resample.
func TestCommonBands(t *testing.T) {
	emit, _ := SensorByName("EMIT")
	enmap, _ := SensorByName("EnMAP")
	common := CommonBands(emit.Bands, enmap.Bands)
	if len(common) == 0 || len(common) >= len(emit.Bands.Good()) {
		t.Fatalf("%d common bands of EMIT's %d good", len(common), len(emit.Bands.Good()))
	}
	for _, i := range common {
		c := emit.Bands.CentresNM[i]
		if c < 418.4 || (c > 1330 && c < 1461) || (c > 1759.6 && c < 1939) || c > 2445.4 || emit.Bands.IsBad(i) {
			t.Errorf("EMIT band %d (%g nm) kept, outside what EnMAP covers", i+1, c)
		}
	}
	sub := emit.Bands.Subset(common)
	for name, scene := range map[string]BandSet{"EnMAP": enmap.Bands, "EMIT": emit.Bands} {
		if _, err := Resample(sub, scene); err != nil {
			t.Errorf("the common bands from %s: %v", name, err)
		}
	}
	if _, err := Resample(emit.Bands.Subset(emit.Bands.Good()), enmap.Bands); err == nil {
		t.Error("all of EMIT's good bands resampled from EnMAP; want its 381 nm band refused")
	}
	// A band set always covers its own good bands.
	if got := CommonBands(enmap.Bands, enmap.Bands); len(got) != len(enmap.Bands.Good()) {
		t.Errorf("EnMAP with itself: %d of %d good bands", len(got), len(enmap.Bands.Good()))
	}
}

func TestParseRanges(t *testing.T) {
	got, err := ParseRanges("400-1340, 1460-1790nm")
	if err != nil || len(got) != 2 || got[0] != [2]float64{400, 1340} || got[1] != [2]float64{1460, 1790} {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "400", "1340-400", "-5-10", "400-nan", "a-b", "400-1340,"} {
		if _, err := ParseRanges(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseRanges: any text is an error or ranges with 0 < LO < HI.
func FuzzParseRanges(f *testing.F) {
	for _, s := range []string{"400-1340,1460-1790", "400-", "1e3-2e3nm", "-", ",", "400-1340,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseRanges(s)
		if err != nil {
			return
		}
		for _, r := range rs {
			if !(r[0] > 0 && r[1] > r[0]) {
				t.Fatalf("%q gave %v", s, r)
			}
		}
	})
}

package synth

import (
	"errors"
	"testing"
)

func TestCheckVRTSize(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		rows, cols, br, bc, bands int
		wantErr                   bool
	}{
		{"docs example", 20000, 20000, 1024, 1024, 103, false},
		{"20000 of a 100x80 block", 20000, 20000, 100, 80, 5, false},
		{"a billion square", 1_000_000_000, 1_000_000_000, 64, 64, 16, true},
		{"beyond int32 rows", 3_000_000_000, 10, 1024, 1024, 1, true},
		{"beyond int32 cols", 10, 1 << 31, 1024, 1024, 1, true},
		{"just under the text limit", 1, MaxVRTBytes/vrtSourceBytes - 1, 1, 1, 1, false},
		{"just over the text limit", 1, MaxVRTBytes/vrtSourceBytes + 1, 1, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckVRTSize(tc.rows, tc.cols, tc.br, tc.bc, tc.bands)
			if (err != nil) != tc.wantErr {
				t.Fatalf("got %v, want error %v", err, tc.wantErr)
			}
			var se *SizeError
			if err != nil && (!errors.Is(err, ErrTooLarge) || !errors.As(err, &se) || se.Rows != tc.rows || se.Cols != tc.cols) {
				t.Errorf("got %#v, want a *SizeError for %dx%d wrapping ErrTooLarge", err, tc.rows, tc.cols)
			}
		})
	}
}

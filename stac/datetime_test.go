package stac

import (
	"testing"
	"time"
)

// TestParseDatetime: the acquisition time forms scenes carry, among them
// the "+0000" zone of EMIT's time_coverage_start, which RFC 3339 parsing
// alone refused (a batch of EMIT scenes then failed for want of a time).
func TestParseDatetime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2023-03-16T04:51:33Z", time.Date(2023, 3, 16, 4, 51, 33, 0, time.UTC), true},
		{"2023-03-16T04:51:33+0000", time.Date(2023, 3, 16, 4, 51, 33, 0, time.UTC), true},
		{"2023-03-16T06:51:33.5+0200", time.Date(2023, 3, 16, 4, 51, 33, 5e8, time.UTC), true},
		{"2023-03-16T06:51:33+02:00", time.Date(2023, 3, 16, 4, 51, 33, 0, time.UTC), true},
		{"2023:03:16 04:51:33", time.Date(2023, 3, 16, 4, 51, 33, 0, time.UTC), true},
		{"2023-06-01T08:30:00.000", time.Date(2023, 6, 1, 8, 30, 0, 0, time.UTC), true},
		{"2023-03-16", time.Date(2023, 3, 16, 0, 0, 0, 0, time.UTC), true},
		{"16/03/2023", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := ParseDatetime(tc.in)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("ParseDatetime(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := SceneDatetime(map[string]string{"ACQUISITIONDATETIME": "2023-03-16T04:51:33+0000"}); !ok || got.Hour() != 4 {
		t.Errorf("SceneDatetime of EMIT's form: %v, %v", got, ok)
	}
}

package oneline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"one line", "one line"},
		{"  kept as is  ", "  kept as is  "},
		{"a\nb", "a; b"},
		{"a\r\nb\r\n", "a; b"},
		{" a \n\n  \n b ", "a; b"},
		{"No space left on device\nNo space left on device\nwrite failed", "No space left on device; write failed"},
	} {
		if got := Fold(tc.in); got != tc.want {
			t.Errorf("Fold(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBound(t *testing.T) {
	if got := Bound("short", 100); got != "short" {
		t.Errorf("Bound of a short message: %q", got)
	}
	long := "start " + strings.Repeat("é", 5000) + " the cause"
	got := Bound(long, 1000)
	if len(got) > 1100 || !strings.HasPrefix(got, "start ") || !strings.HasSuffix(got, " the cause") ||
		!strings.Contains(got, "bytes left out") || !utf8.ValidString(got) {
		t.Errorf("Bound(%d bytes, 1000) = %d bytes %q...", len(long), len(got), got[:60])
	}
}

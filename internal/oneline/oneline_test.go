package oneline

import "testing"

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

// Package oneline folds multi-line error messages into the single line that
// users, report files and log scrapers expect. GDAL often reports one failure
// as several messages (libtiff repeats "No space left on device" for every
// strip it tries), which godal joins with newlines.
package oneline

import "strings"

// Fold joins the non-blank lines of msg, trimmed, with "; ", keeping each
// distinct line once, in order. A message without line breaks comes back
// unchanged.
func Fold(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// Package oneline folds multi-line error messages into the single line that
// users, report files and log scrapers expect. GDAL often reports one failure
// as several messages (libtiff repeats "No space left on device" for every
// strip it tries), which godal joins with newlines.
package oneline

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

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

// MaxBytes is the length Bound cuts a message to: room for several
// paths of the longest a system takes (PATH_MAX, 4096) and their words.
const MaxBytes = 16 << 10

// Bound is msg cut to at most about max bytes: its start and its end (where
// the cause usually is), the middle replaced by a note of how many bytes
// were left out, cut at UTF-8 boundaries. A message of a 50 MB STAC Item id
// made a 100 MB stderr line.
func Bound(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	head, tail := max*3/4, max/4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	t := len(msg) - tail
	for t < len(msg) && !utf8.RuneStart(msg[t]) {
		t++
	}
	return fmt.Sprintf("%s …[%d bytes left out]… %s", msg[:head], t-head, msg[t:])
}

package synth

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrLayout reports a layout that cannot be used (bad size, too many classes).
var ErrLayout = errors.New("bad layout")

// MaxClasses is the largest label value a layout may hold: labels are
// written as a Byte raster.
const MaxClasses = 255

// Layout is a label map: which land-cover class each pixel belongs to.
type Layout struct {
	Rows, Cols int
	// Labels is row-major, Labels[r*Cols+c]; 0 means unlabelled background.
	Labels []uint8
	// Names optionally names label values (procedural layouts name theirs).
	Names map[int]string
}

// NewLayout checks labels against rows x cols and wraps them.
func NewLayout(rows, cols int, labels []uint8) (*Layout, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("%w: size %dx%d", ErrLayout, rows, cols)
	}
	if len(labels) != rows*cols {
		return nil, fmt.Errorf("%w: %d labels for %dx%d pixels", ErrLayout, len(labels), rows, cols)
	}
	return &Layout{Rows: rows, Cols: cols, Labels: labels}, nil
}

// Classes returns the distinct non-zero label values in ascending order.
func (l *Layout) Classes() []int {
	var seen [256]bool
	for _, v := range l.Labels {
		seen[v] = true
	}
	var out []int
	for v := 1; v < 256; v++ {
		if seen[v] {
			out = append(out, v)
		}
	}
	return out
}

// Counts returns the number of pixels per label value (index = value).
func (l *Layout) Counts() [256]int {
	var n [256]int
	for _, v := range l.Labels {
		n[v]++
	}
	return n
}

// ParseSize parses "ROWSxCOLS" (e.g. "610x340").
func ParseSize(s string) (rows, cols int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return 0, 0, fmt.Errorf("%w: size %q: want ROWSxCOLS, e.g. 610x340", ErrLayout, s)
	}
	rows, err1 := strconv.Atoi(a)
	cols, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || rows <= 0 || cols <= 0 {
		return 0, 0, fmt.Errorf("%w: size %q: want two positive integers ROWSxCOLS", ErrLayout, s)
	}
	return rows, cols, nil
}

// sortedKeys returns m's keys in order (for stable metadata).
func sortedKeys(m map[int]string) []int {
	k := make([]int, 0, len(m))
	for v := range m {
		k = append(k, v)
	}
	sort.Ints(k)
	return k
}

package model

import (
	"fmt"
	"math"
	"sort"
)

// Confusion is a confusion matrix over dense class indices:
// Counts[t*Classes+p] is the number of pixels of true class t predicted as p.
type Confusion struct {
	Classes int
	Counts  []int64
}

// NewConfusion returns an empty classes x classes confusion matrix.
func NewConfusion(classes int) Confusion {
	return Confusion{Classes: classes, Counts: make([]int64, classes*classes)}
}

// ConfusionOf counts the pairs (truth[i], pred[i]) of dense class indices.
// A prediction outside 0..classes-1 (e.g. -1 for "no class") is an error of
// the caller's data and is reported.
func ConfusionOf(truth, pred []int, classes int) (Confusion, error) {
	if len(truth) != len(pred) {
		return Confusion{}, fmt.Errorf("confusion: %d truths and %d predictions", len(truth), len(pred))
	}
	c := NewConfusion(classes)
	for i := range truth {
		t, p := truth[i], pred[i]
		if t < 0 || t >= classes || p < 0 || p >= classes {
			return Confusion{}, fmt.Errorf("confusion: pixel %d: truth %d, prediction %d outside 0..%d", i, t, p, classes-1)
		}
		c.Counts[t*classes+p]++
	}
	return c, nil
}

// Total is the number of counted pixels.
func (c Confusion) Total() int64 {
	var n int64
	for _, v := range c.Counts {
		n += v
	}
	return n
}

// Support is the number of pixels of each true class.
func (c Confusion) Support() []int64 {
	s := make([]int64, c.Classes)
	for t := 0; t < c.Classes; t++ {
		for p := 0; p < c.Classes; p++ {
			s[t] += c.Counts[t*c.Classes+p]
		}
	}
	return s
}

// OA is the overall accuracy in 0..1 (NaN for an empty matrix).
func (c Confusion) OA() float64 {
	n := c.Total()
	if n == 0 {
		return math.NaN()
	}
	var d int64
	for k := 0; k < c.Classes; k++ {
		d += c.Counts[k*c.Classes+k]
	}
	return float64(d) / float64(n)
}

// PerClass is each class's accuracy (recall, producer's accuracy) in 0..1;
// NaN for a class with no pixels.
func (c Confusion) PerClass() []float64 {
	s := c.Support()
	out := make([]float64, c.Classes)
	for k := range out {
		if s[k] == 0 {
			out[k] = math.NaN()
			continue
		}
		out[k] = float64(c.Counts[k*c.Classes+k]) / float64(s[k])
	}
	return out
}

// AA is the average accuracy: the mean of PerClass over the classes that
// have pixels (NaN when none has).
func (c Confusion) AA() float64 {
	sum, n := 0.0, 0
	for _, v := range c.PerClass() {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Kappa is Cohen's kappa, (p_o - p_e) / (1 - p_e), with p_e the agreement
// expected by chance from the row and column totals. When p_e is 1 (a single
// class in both truth and predictions) it is 1 for perfect agreement.
func (c Confusion) Kappa() float64 {
	n := float64(c.Total())
	if n == 0 {
		return math.NaN()
	}
	po := c.OA()
	pe := 0.0
	for k := 0; k < c.Classes; k++ {
		var row, col int64
		for j := 0; j < c.Classes; j++ {
			row += c.Counts[k*c.Classes+j]
			col += c.Counts[j*c.Classes+k]
		}
		pe += (float64(row) / n) * (float64(col) / n)
	}
	if pe >= 1 {
		if po >= 1 {
			return 1
		}
		return 0
	}
	return (po - pe) / (1 - pe)
}

// Accuracy is the usual summary of a confusion matrix.
type Accuracy struct {
	OA, AA, Kappa float64   // 0..1
	PerClass      []float64 // 0..1 by dense class index, NaN without test pixels
	Support       []int64   // test pixels per class
	Confusion     Confusion
}

// Summarize computes the Accuracy of c.
func (c Confusion) Summarize() Accuracy {
	return Accuracy{OA: c.OA(), AA: c.AA(), Kappa: c.Kappa(), PerClass: c.PerClass(), Support: c.Support(), Confusion: c}
}

// ErrorDetection says how well an uncertainty score singles out wrong
// predictions: the paper's reliability table.
type ErrorDetection struct {
	Correct, Wrong int
	// MeanCorrect and MeanWrong are the mean uncertainty of the correct and
	// the wrong pixels (NaN when there are none).
	MeanCorrect, MeanWrong float64
	// AUROC is the area under the ROC curve of the uncertainty as a detector
	// of errors: the probability that a random wrong pixel is more uncertain
	// than a random correct one, ties counting one half. 0.5 is chance.
	// NaN when either group is empty.
	AUROC float64
	// TopRecall is the share of all errors that lie among the TopFraction
	// most uncertain pixels (ties at the cut shared out evenly). NaN without errors.
	TopRecall   float64
	TopFraction float64
}

// DetectErrors evaluates uncertainty (higher = less reliable) against
// wrong (true where the prediction is wrong) over the same pixels, with the
// paper's top fraction (e.g. 0.2).
func DetectErrors(uncertainty []float32, wrong []bool, topFraction float64) (ErrorDetection, error) {
	if len(uncertainty) != len(wrong) {
		return ErrorDetection{}, fmt.Errorf("error detection: %d scores and %d outcomes", len(uncertainty), len(wrong))
	}
	if !(topFraction >= 0 && topFraction <= 1) {
		return ErrorDetection{}, fmt.Errorf("error detection: top fraction %g outside 0..1", topFraction)
	}
	for i, u := range uncertainty {
		if math.IsNaN(float64(u)) {
			return ErrorDetection{}, fmt.Errorf("error detection: score of pixel %d is NaN", i)
		}
	}
	d := ErrorDetection{TopFraction: topFraction}
	var sumC, sumW float64
	for i, u := range uncertainty {
		if wrong[i] {
			d.Wrong++
			sumW += float64(u)
		} else {
			d.Correct++
			sumC += float64(u)
		}
	}
	d.MeanCorrect, d.MeanWrong = math.NaN(), math.NaN()
	if d.Correct > 0 {
		d.MeanCorrect = sumC / float64(d.Correct)
	}
	if d.Wrong > 0 {
		d.MeanWrong = sumW / float64(d.Wrong)
	}
	d.AUROC, d.TopRecall = math.NaN(), math.NaN()
	n := len(uncertainty)
	if n == 0 {
		return d, nil
	}
	// Order by uncertainty, most uncertain first, and walk groups of ties.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return uncertainty[order[a]] > uncertainty[order[b]] })
	top := topFraction * float64(n) // pixels in the top group (may be fractional at a tie)
	var (
		correctAbove int     // correct pixels strictly more uncertain than the current group
		pairs        float64 // wrong-correct pairs ranked right, ties half
		topErrors    float64
		seen         int
	)
	for g0 := 0; g0 < n; {
		g1 := g0 + 1
		for g1 < n && uncertainty[order[g1]] == uncertainty[order[g0]] {
			g1++
		}
		var w, c int
		for _, i := range order[g0:g1] {
			if wrong[i] {
				w++
			} else {
				c++
			}
		}
		// Each wrong pixel of the group outranks the correct pixels below the
		// group and ties with the group's correct pixels.
		below := d.Correct - correctAbove - c
		pairs += float64(w) * (float64(below) + 0.5*float64(c))
		// Share of this group inside the top: all, none, or a fraction when
		// the cut falls inside a tie.
		if in := top - float64(seen); in > 0 {
			frac := math.Min(1, in/float64(g1-g0))
			topErrors += frac * float64(w)
		}
		correctAbove += c
		seen += g1 - g0
		g0 = g1
	}
	if d.Wrong > 0 && d.Correct > 0 {
		d.AUROC = pairs / (float64(d.Wrong) * float64(d.Correct))
	}
	if d.Wrong > 0 {
		d.TopRecall = topErrors / float64(d.Wrong)
	}
	return d, nil
}

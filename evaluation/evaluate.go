package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/spectral"
	"github.com/pnec/pnec/tiling"
)

// DefaultTopFraction is the share of most uncertain pixels in which the
// paper's reliability table counts the errors (20%).
const DefaultTopFraction = 0.2

// EvalOptions tune Evaluate. Zero values mean the documented defaults.
type EvalOptions struct {
	Backend string // "" = model.NewPredictor's default
	// Recovery overrides the model's recovery parameters when Window > 0.
	Recovery model.RecoveryParams
	// TopFraction is the share of most uncertain pixels for the top-recall
	// column (0 = DefaultTopFraction).
	TopFraction float64
	// ResampleBands computes the model's bands from a scene whose bands are
	// not the model's (see model.Model.BandPlan) instead of refusing it.
	ResampleBands bool
	// Radiometry says what the scene's values measure when the scene does
	// not say; the scene's own statement wins.
	Radiometry spectral.Radiometry
}

// ReliabilityScore is one reliability candidate's row of the paper's
// reliability table, on the final labels of the test pixels; uncertainty is
// 1 - reliability.
type ReliabilityScore struct {
	Kind    model.ReliabilityKind
	Default bool // the kind products carry by default
	model.ErrorDetection
}

// Evaluation is the accuracy of a model on the test pixels of a labelled
// scene, with and without the recovery step, and how well each reliability
// candidate finds its errors.
type Evaluation struct {
	ModelChecksum string
	Backend       string
	Ablation      model.Ablation
	Classes       []model.Class
	Rows, Cols    int
	// TestPixels are the labelled valid pixels that are not training pixels.
	TestPixels int
	// UnseenClasses are the label values of test pixels that are not
	// classes of the model (new ground where a class was missing from
	// training), in increasing order: their pixels count as errors, and
	// each is a class of its own after the model's in Classes (named
	// UnseenClassName) and in the accuracies' per-class figures and
	// confusion matrices, which the model never predicts.
	UnseenClasses []int32
	// TrainPixelsExcluded counts the labelled pixels left out because the
	// model trained on them (0 when the scene is not the training scene's size).
	TrainPixelsExcluded int
	Recovery            model.RecoveryParams
	// Raw is the accuracy of argmax P_up (no recovery); Recovered of argmax
	// P_rec. Final is the one the model's ablation uses for its labels
	// (Raw for no-recovery, Recovered otherwise).
	Raw, Recovered model.Accuracy
	FinalRecovered bool
	Reliability    []ReliabilityScore
	InferenceTime  time.Duration // the network's Predict call (Evaluate: the first, compiling one)
	// ScoredProduct: the final accuracy is that of the class band of the
	// scene's product made as pnec classify makes it, for a scene the
	// model's grid tiles (EvaluateFiles; scoreTiledProduct).
	ScoredProduct bool
	// Warnings are what reading the scene assumed or converted (a scene
	// without wavelengths taken band for band, a reflectance scale
	// converted), one sentence each.
	Warnings []string
}

// Final is the accuracy of the labels a product would carry.
func (e Evaluation) Final() model.Accuracy {
	if e.FinalRecovered {
		return e.Recovered
	}
	return e.Raw
}

// EvaluateFiles reads a scene and its labels and evaluates m on them.
// The scene's bands are checked against the model's and made into the
// model's (model.Model.BandPlan); the plan's warnings are in the
// Evaluation.
func EvaluateFiles(ctx context.Context, m *model.Model, scene, labels string, opts EvalOptions) (Evaluation, error) {
	var warnings []string
	plan := func(info geo.Info) (*spectral.Plan, error) {
		rad := info.Radiometry
		if !rad.Known() {
			rad = opts.Radiometry
		}
		p, err := m.BandPlan(info.BandSet(), rad, opts.ResampleBands)
		if err != nil {
			return nil, err
		}
		warnings = p.Warnings
		return &p, nil
	}
	in, err := readInputs(ctx, scene, labels, plan)
	if err != nil {
		return Evaluation{}, err
	}
	if err := m.CheckBands(scene, in.scene.Bands); err != nil {
		return Evaluation{}, err
	}
	ev, err := Evaluate(ctx, m, in.scene, in.labels, opts)
	ev.Warnings = warnings
	if err != nil {
		return ev, err
	}
	if err := scoreTiledProduct(ctx, m, scene, in, opts, &ev); err != nil {
		return ev, err
	}
	return ev, nil
}

// scoreTiledProduct scores the final labels of a scene the model's grid
// tiles (above 384 px a side) on the class band of its product, made as
// pnec classify makes it (processor.Classifier: the same tiles, overlap,
// stitching, decision and recovery), so that evaluate's accuracy is that
// of the map the product holds. Evaluate predicts the scene whole, whose
// map differs from the stitched tiles' near the seams;
// the raw accuracy (when the final is the recovered one) and the
// reliability rows stay those of that whole-scene prediction. A recovery
// evaluate overrides (opts.Recovery) is not one a product has: such a run
// keeps its own map, as do scenes run whole (predictAsProduct pads them as
// the product's run does).
func scoreTiledProduct(ctx context.Context, m *model.Model, scene string, in inputs, opts EvalOptions, ev *Evaluation) error {
	if opts.Recovery.Window > 0 {
		return nil
	}
	plan, _, err := processor.PlanSceneInfo(in.info, m, processor.Options{})
	if err != nil {
		return fmt.Errorf("plan %s as pnec classify does: %w", scene, err)
	}
	if plan.Whole {
		return nil
	}
	dir, err := os.MkdirTemp("", "pnec-evaluate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c, err := processor.NewClassifier(m, processor.Options{Backend: opts.Backend, ResampleBands: opts.ResampleBands, Radiometry: opts.Radiometry, NoThumbnail: true})
	if err != nil {
		return err
	}
	defer c.Close()
	out := filepath.Join(dir, "product.tif")
	if _, err := c.Run(ctx, processor.Request{Scene: scene, Out: out}); err != nil {
		return fmt.Errorf("classify %s as pnec classify does, to score its product: %w", scene, err)
	}
	classes, err := readClassBand(ctx, out, in.scene.Rows, in.scene.Cols)
	if err != nil {
		return err
	}
	acc, err := classBandAccuracy(SpecOf(m), classes, in.scene, in.labels, len(ev.Classes))
	if err != nil {
		return fmt.Errorf("score the product of %s: %w", scene, err)
	}
	if ev.FinalRecovered {
		ev.Recovered = acc
	} else {
		ev.Raw = acc
	}
	ev.ScoredProduct = true
	return nil
}

// readClassBand reads band 1 (the class values) of the product at path,
// rows x cols pixels, row-major; no-data pixels read as NaN.
func readClassBand(ctx context.Context, path string, rows, cols int) ([]float32, error) {
	s, err := geo.Open(path)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	info := s.Info()
	if info.Rows != rows || info.Cols != cols {
		return nil, fmt.Errorf("product %s: %d x %d pixels (cols x rows), the scene %d x %d", path, info.Cols, info.Rows, cols, rows)
	}
	blk, err := s.ReadWindow(ctx, geo.Window{Cols: cols, Rows: rows})
	if err != nil {
		return nil, fmt.Errorf("product %s: %w", path, err)
	}
	out := make([]float32, rows*cols)
	for i := range out {
		out[i] = float32(math.NaN())
		if blk.Valid == nil || blk.Valid[i] {
			out[i] = blk.Data[i*info.Bands]
		}
	}
	return out, nil
}

// classBandAccuracy is the accuracy of a product's class values (NaN:
// no-data) on the test pixels Score picks (labelled, valid, not training
// pixels), with nClasses the Evaluation's classes (the model's, then the
// unseen label values). A test pixel the product leaves no-data or gives
// a value that is no class is an error.
func classBandAccuracy(m ScoreSpec, classes []float32, scene model.Scene, labels []int32, nClasses int) (model.Accuracy, error) {
	dense := map[int32]int{}
	for k, c := range m.Classes {
		dense[int32(c.Value)] = k
	}
	tp, err := testPixelsOf(m, model.Prediction{Rows: scene.Rows, Cols: scene.Cols}, scene.Valid, labels, dense)
	if err != nil {
		return model.Accuracy{}, err
	}
	pred := make([]int, len(tp.test))
	for j, i := range tp.test {
		v := classes[i]
		k, ok := dense[int32(v)]
		if math.IsNaN(float64(v)) || !ok || float32(int32(v)) != v {
			// Counted wrong: any index other than the truth's.
			k = (tp.truth[j] + 1) % nClasses
		}
		pred[j] = k
	}
	c, err := model.ConfusionOf(tp.truth, pred, nClasses)
	if err != nil {
		return model.Accuracy{}, err
	}
	return c.Summarize(), nil
}

// Evaluate runs m on s and scores it against labels (class values,
// row-major, 0 = unlabelled) on the test pixels: labelled valid pixels that
// are not among m.TrainIndices() (when s has the training scene's size).
func Evaluate(ctx context.Context, m *model.Model, s model.Scene, labels []int32, opts EvalOptions) (Evaluation, error) {
	p, err := model.NewPredictor(m, opts.Backend)
	if err != nil {
		return Evaluation{}, err
	}
	defer p.Close()
	start := time.Now()
	pred, err := predictAsProduct(ctx, p, m, s)
	if err != nil {
		return Evaluation{}, err
	}
	elapsed := time.Since(start)
	ev, err := Score(SpecOf(m), pred, s, labels, opts)
	if err != nil {
		return Evaluation{}, err
	}
	ev.Backend = p.Backend()
	ev.InferenceTime = elapsed
	return ev, nil
}

// predictAsProduct runs p on s as pnec classify runs a scene the model's
// grid classifies whole: padded with no-data to the planner's shape
// (processor.SceneShape, the ladder's next rung), the prediction then cut
// back to the scene. Unpadded, the network saw another input than the
// product's and its map differed (by up to 6 OA points on half
// scenes). A scene the grid tiles is predicted whole, as before:
// its map can still differ from the product's at the tiles' seams.
func predictAsProduct(ctx context.Context, p *model.Predictor, m *model.Model, s model.Scene) (model.Prediction, error) {
	shape, err := processor.SceneShape(s.Rows, s.Cols, m, processor.Options{})
	// A scene the plan tiles has a side longer than its tiles (the shape);
	// one that runs whole is padded to the shape, as the product is.
	if err != nil || shape.Rows < s.Rows || shape.Cols < s.Cols || (shape.Rows == s.Rows && shape.Cols == s.Cols) {
		return p.Predict(ctx, s)
	}
	pred, err := p.Predict(ctx, model.PadScene(s, shape.Rows, shape.Cols))
	if err != nil {
		return pred, err
	}
	return cropPrediction(pred, s.Rows, s.Cols), nil
}

// cropPrediction is the top-left rows x cols of p (its cell grid cut to
// the cells those pixels lie in).
func cropPrediction(p model.Prediction, rows, cols int) model.Prediction {
	K := p.Classes
	out := model.Prediction{Rows: rows, Cols: cols, Classes: K, Recovered: p.Recovered,
		Prob: make([]float32, rows*cols*K), Uncertainty: make([]float32, rows*cols)}
	for r := 0; r < rows; r++ {
		copy(out.Prob[r*cols*K:(r+1)*cols*K], p.Prob[r*p.Cols*K:(r*p.Cols+cols)*K])
		copy(out.Uncertainty[r*cols:(r+1)*cols], p.Uncertainty[r*p.Cols:r*p.Cols+cols])
	}
	if p.CellRows > 0 && p.CellCols > 0 && len(p.PrototypeCos) == p.CellRows*p.CellCols*K {
		cr, cc := min((rows+3)/4, p.CellRows), min((cols+3)/4, p.CellCols)
		out.CellRows, out.CellCols, out.PrototypeCos = cr, cc, make([]float32, cr*cc*K)
		for r := 0; r < cr; r++ {
			copy(out.PrototypeCos[r*cc*K:(r+1)*cc*K], p.PrototypeCos[r*p.CellCols*K:(r*p.CellCols+cc)*K])
		}
	}
	return out
}

// ScoreSpec is what Score needs to know about a model.
type ScoreSpec struct {
	Checksum string
	Backend  string
	Ablation model.Ablation
	Classes  []model.Class
	Recovery model.RecoveryParams
	// TrainIndices are left out of the test pixels when the scene has the
	// training scene's size TrainRows x TrainCols.
	TrainIndices         []int
	TrainRows, TrainCols int
	// Spectral is the model's stored training spectra (nil for model files
	// without them). With it the spectral candidates are scored on any
	// scene, and the default is model.DefaultReliability, as in products.
	Spectral *model.SpectralReference
	// Decision is how the model decides its classes, with DecisionRef the
	// reference a fused decision measures angles to (model.DecisionReference):
	// the scored labels are those of the products' class band.
	Decision    model.Decision
	DecisionRef *model.SpectralReference
}

// SpecOf describes m for Score.
func SpecOf(m *model.Model) ScoreSpec {
	r, c := m.TrainSceneSize()
	spec := ScoreSpec{Checksum: m.Checksum(), Backend: m.Backend(), Ablation: m.Config().Ablation,
		Classes: m.Classes(), Recovery: m.Recovery(), TrainIndices: m.TrainIndices(), TrainRows: r, TrainCols: c}
	if _, ref, err := m.ResolveReliability(model.DefaultReliability, nil); err == nil {
		spec.Spectral = ref
	}
	spec.Decision = m.Decision()
	if ref, err := m.DecisionReference(); err == nil {
		spec.DecisionRef = ref
	}
	return spec
}

// Score evaluates a prediction of the model m describes against labels. It
// is Evaluate without the network: scene gives the validity mask (Valid nil
// = all valid) and, when it holds Data and is the training scene, the
// spectra for the spectral reliability candidates (skipped otherwise).
func Score(m ScoreSpec, pred model.Prediction, scene model.Scene, labels []int32, opts EvalOptions) (Evaluation, error) {
	valid := scene.Valid
	if err := checkScoreInputs(m, pred, valid, labels); err != nil {
		return Evaluation{}, err
	}
	rec := m.Recovery
	if opts.Recovery.Window > 0 {
		rec = opts.Recovery
	}
	if err := rec.Validate(); err != nil {
		return Evaluation{}, err
	}
	top := opts.TopFraction
	if top == 0 {
		top = DefaultTopFraction
	}
	dense := map[int32]int{}
	for k, c := range m.Classes {
		dense[int32(c.Value)] = k
	}
	tp, err := testPixelsOf(m, pred, valid, labels, dense)
	if err != nil {
		return Evaluation{}, err
	}
	K := pred.Classes
	classes := slices.Clone(m.Classes)
	for _, v := range tp.unseen {
		classes = append(classes, model.Class{Value: int(v), Name: UnseenClassName})
	}
	decided, err := model.FuseScene(m.Decision, m.DecisionRef, scene, pred.Prob)
	if err != nil {
		return Evaluation{}, err
	}
	prec := tiling.Recover(decided, valid, pred.Rows, pred.Cols, K, rec)
	raw, err := accuracyAt(pred.Prob, K, len(classes), tp.test, tp.truth)
	if err != nil {
		return Evaluation{}, err
	}
	recovered, err := accuracyAt(prec, K, len(classes), tp.test, tp.truth)
	if err != nil {
		return Evaluation{}, err
	}
	ev := Evaluation{
		ModelChecksum: m.Checksum, Backend: m.Backend, Ablation: m.Ablation,
		Classes: classes, UnseenClasses: tp.unseen, Rows: pred.Rows, Cols: pred.Cols,
		TestPixels: len(tp.test), TrainPixelsExcluded: tp.excluded, Recovery: rec,
		Raw: raw, Recovered: recovered, FinalRecovered: m.Ablation != model.AblationNoRecovery,
	}
	final := prec
	if !ev.FinalRecovered {
		final = pred.Prob
	}
	if ev.Reliability, err = scoreReliability(m, pred, scene, labels, dense, final, tp, top); err != nil {
		return Evaluation{}, err
	}
	return ev, nil
}

// checkScoreInputs checks that the labels, the validity mask and the
// prediction's arrays have the prediction's pixels and the model's classes.
func checkScoreInputs(m ScoreSpec, pred model.Prediction, valid []bool, labels []int32) error {
	n := pred.Rows * pred.Cols
	if len(labels) != n {
		return fmt.Errorf("labels have %d values, the prediction %d pixels: %w", len(labels), n, ErrLabels)
	}
	if valid != nil && len(valid) != n {
		return fmt.Errorf("validity mask has %d values, the prediction %d pixels", len(valid), n)
	}
	classes := m.Classes
	if pred.Classes != len(classes) || len(pred.Prob) != n*pred.Classes || len(pred.Uncertainty) != n {
		return fmt.Errorf("prediction of %d classes with %d probabilities and %d uncertainties for %d pixels, model has %d classes",
			pred.Classes, len(pred.Prob), len(pred.Uncertainty), n, len(classes))
	}
	return nil
}

// testPixels are the pixels Score scores: labelled valid pixels that are
// not training pixels, with their dense classes (truth: the model's
// classes, then the unseen ones), the label values that are no class of
// the model, and how many training pixels were left out.
type testPixels struct {
	test, truth []int
	unseen      []int32
	excluded    int
}

// UnseenClassName names, in an Evaluation's Classes, a label value that
// is no class of the model.
const UnseenClassName = "(not a class of the model)"

// maxUnseenClasses bounds the label values that are no class of the
// model: each adds a row and a column to the confusion matrices, and
// thousands of them are a label raster of another kind (an id raster).
const maxUnseenClasses = 256

// testPixelsOf finds the test pixels of labels; the training pixels are
// m's when the prediction is of the training scene's size.
func testPixelsOf(m ScoreSpec, pred model.Prediction, valid []bool, labels []int32, dense map[int32]int) (testPixels, error) {
	n := pred.Rows * pred.Cols
	isTrain := make([]bool, n)
	if m.TrainRows == pred.Rows && m.TrainCols == pred.Cols {
		for _, i := range m.TrainIndices {
			if i >= 0 && i < n {
				isTrain[i] = true
			}
		}
	}
	var tp testPixels
	for i, v := range labels {
		if v == 0 || (valid != nil && !valid[i]) {
			continue
		}
		if isTrain[i] {
			tp.excluded++
			continue
		}
		tp.test = append(tp.test, i)
		if _, ok := dense[v]; !ok && !slices.Contains(tp.unseen, v) {
			if len(tp.unseen) == maxUnseenClasses {
				return testPixels{}, fmt.Errorf("more than %d label values are not classes of the model (%s), e.g. %d at pixel (row %d, col %d): %w",
					maxUnseenClasses, classValues(m.Classes), v, i/pred.Cols, i%pred.Cols, ErrLabels)
			}
			tp.unseen = append(tp.unseen, v)
		}
	}
	if len(tp.test) == 0 {
		return testPixels{}, fmt.Errorf("no test pixels: every labelled valid pixel is a training pixel: %w", ErrLabels)
	}
	slices.Sort(tp.unseen)
	ext := maps.Clone(dense)
	for j, v := range tp.unseen {
		ext[v] = len(m.Classes) + j
	}
	tp.truth = make([]int, len(tp.test))
	for j, i := range tp.test {
		tp.truth[j] = ext[labels[i]]
	}
	return tp, nil
}

// scoreReliability scores each reliability candidate's detection of the
// test pixels whose final label (final's argmax) is wrong, top the share
// of most uncertain pixels; the spectral candidates join when there are
// spectra to compare.
func scoreReliability(m ScoreSpec, pred model.Prediction, scene model.Scene, labels []int32, dense map[int32]int,
	final []float32, tp testPixels, top float64) ([]ReliabilityScore, error) {
	K := pred.Classes
	test := tp.test
	wrong := make([]bool, len(test))
	for j, i := range test {
		wrong[j] = argmaxAt(final, K, i) != tp.truth[j]
	}
	kinds := model.ReliabilityKinds
	ref, defaultKind := scoreReference(m, scene, dense, labels, K, pred.Rows*pred.Cols)
	var agreement []float32 // by test pixel
	if ref != nil {
		kinds = append(slices.Clone(kinds), model.SpectralReliabilityKinds...)
		agreement = make([]float32, len(test))
		B := scene.Bands
		for j, i := range test {
			agreement[j] = ref.Agreement(scene.Data[i*B:(i+1)*B], argmaxAt(final, K, i))
		}
	}
	var out []ReliabilityScore
	unc := make([]float32, len(test))
	for _, kind := range kinds {
		for j, i := range test {
			var a float32
			if agreement != nil {
				a = agreement[j]
			}
			r := kind.PixelSpectral(final[i*K:(i+1)*K], pred.Uncertainty[i], a)
			if math.IsNaN(float64(r)) {
				// A test pixel with no probabilities: treat as least reliable.
				r = 0
			}
			unc[j] = 1 - r
		}
		d, err := model.DetectErrors(unc, wrong, top)
		if err != nil {
			return nil, fmt.Errorf("reliability %s: %w", kind, err)
		}
		out = append(out, ReliabilityScore{Kind: kind, Default: kind == defaultKind, ErrorDetection: d})
	}
	return out, nil
}

// scoreReference is the spectral reference the spectral candidates
// compare with (nil when the scene has no spectra to compare, n pixels)
// and the reliability products of m carry by default: the model's stored
// spectra (model.DefaultReliability), else the scene's training spectra
// (model.FallbackReliability).
func scoreReference(m ScoreSpec, scene model.Scene, dense map[int32]int, labels []int32, K, n int) (*model.SpectralReference, model.ReliabilityKind) {
	defaultKind := model.FallbackReliability // what products of this model carry by default
	ref := m.Spectral
	if ref != nil {
		defaultKind = model.DefaultReliability
	} else {
		ref = spectralReference(m, scene, dense, labels, K)
	}
	if ref != nil && (scene.Bands != ref.Bands() || len(scene.Data) != n*scene.Bands) {
		ref = nil // no spectra to compare (Score without scene data)
	}
	return ref, defaultKind
}

// spectralReference builds the training pixels' spectral reference when
// scene is the training scene with its data; nil otherwise.
func spectralReference(m ScoreSpec, scene model.Scene, dense map[int32]int, labels []int32, k int) *model.SpectralReference {
	n := scene.Rows * scene.Cols
	if scene.Data == nil || scene.Bands < 1 || len(scene.Data) != n*scene.Bands ||
		m.TrainRows != scene.Rows || m.TrainCols != scene.Cols || len(m.TrainIndices) == 0 {
		return nil
	}
	B := scene.Bands
	var spectra []float32
	var class []int
	for _, i := range m.TrainIndices {
		if i < 0 || i >= n || (scene.Valid != nil && !scene.Valid[i]) {
			continue
		}
		c, ok := dense[labels[i]]
		if !ok {
			continue
		}
		spectra = append(spectra, scene.Data[i*B:(i+1)*B]...)
		class = append(class, c)
	}
	ref, err := model.NewSpectralReference(spectra, B, class, k)
	if err != nil {
		return nil
	}
	return ref
}

// argmaxAt is pixel i's predicted dense class in prob ([pixels][k]); a
// pixel with no positive probability (none among valid pixels: softmax is
// positive) counts as class 0, as before.
func argmaxAt(prob []float32, k, i int) int {
	return max(tiling.ArgmaxPixel(prob[i*k:(i+1)*k]), 0)
}

func accuracyAt(prob []float32, k, classes int, test, truth []int) (model.Accuracy, error) {
	pred := make([]int, len(test))
	for j, i := range test {
		pred[j] = argmaxAt(prob, k, i)
	}
	c, err := model.ConfusionOf(truth, pred, classes)
	if err != nil {
		return model.Accuracy{}, err
	}
	return c.Summarize(), nil
}

func classValues(cs []model.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = fmt.Sprint(c.Value)
	}
	return strings.Join(s, ", ")
}

// pct formats a 0..1 ratio as a percentage with 2 decimals ("-" for NaN).
func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", 100*v)
}

func num4(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.4f", v)
}

// unseenPixels is the test pixels of the unseen classes.
func (e Evaluation) unseenPixels() int64 {
	var n int64
	sup := e.Final().Support
	for k := len(e.Classes) - len(e.UnseenClasses); k < len(sup); k++ {
		n += sup[k]
	}
	return n
}

func joinInts(vs []int32) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

// WriteText prints the evaluation as tables: accuracy with and without
// recovery, the confusion matrix of the final labels, and the reliability
// table.
func (e Evaluation) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "model %s (ablation %s), backend %s, inference %.2f s (network compilation included)\n",
		short(e.ModelChecksum), e.Ablation, e.Backend, e.InferenceTime.Seconds())
	for _, w := range e.Warnings {
		fmt.Fprintf(&b, "note: %s\n", w)
	}
	if len(e.UnseenClasses) > 0 {
		fmt.Fprintf(&b, "note: label values %s are not classes of the model: their %d test pixels count as errors\n",
			joinInts(e.UnseenClasses), e.unseenPixels())
	}
	if e.ScoredProduct {
		final := "with recovery"
		if !e.FinalRecovered {
			final = "without recovery"
		}
		fmt.Fprintf(&b, "note: the scene runs in tiles; the %s column is the class band of its product as pnec classify writes it, the rest the whole scene's prediction\n", final)
	}
	fmt.Fprintf(&b, "test pixels: %d (labelled valid pixels; %d training pixels left out)\n\n", e.TestPixels, e.TrainPixelsExcluded)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric (%%)\twithout recovery\twith recovery (window %d, eta %g)\t\n", e.Recovery.Window, e.Recovery.Eta)
	fmt.Fprintf(tw, "OA\t%s\t%s\t\n", pct(e.Raw.OA), pct(e.Recovered.OA))
	fmt.Fprintf(tw, "AA\t%s\t%s\t\n", pct(e.Raw.AA), pct(e.Recovered.AA))
	fmt.Fprintf(tw, "kappa\t%s\t%s\t\n", pct(e.Raw.Kappa), pct(e.Recovered.Kappa))
	for k, c := range e.Classes {
		fmt.Fprintf(tw, "%d %s (%d px)\t%s\t%s\t\n", c.Value, c.Name, e.Recovered.Support[k], pct(e.Raw.PerClass[k]), pct(e.Recovered.PerClass[k]))
	}
	tw.Flush()
	which := "with recovery"
	if !e.FinalRecovered {
		which = "without recovery"
	}
	fmt.Fprintf(&b, "\nconfusion matrix of the final labels (%s): rows = truth, columns = prediction (class values)\n", which)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, c := range e.Classes {
		fmt.Fprintf(tw, "%d\t", c.Value)
	}
	fmt.Fprintln(tw)
	cm := e.Final().Confusion
	for t, c := range e.Classes {
		fmt.Fprintf(tw, "%d\t", c.Value)
		for p := range e.Classes {
			fmt.Fprintf(tw, "%d\t", cm.Counts[t*cm.Classes+p])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fin := e.Final()
	nWrong := int64(math.Round((1 - fin.OA) * float64(e.TestPixels)))
	fmt.Fprintf(&b, "\nreliability-based error localisation (%d of %d test pixels wrong; uncertainty = 1 - reliability)\n", nWrong, e.TestPixels)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	top := 100 * DefaultTopFraction
	if len(e.Reliability) > 0 {
		top = 100 * e.Reliability[0].TopFraction
	}
	fmt.Fprintf(tw, "reliability\tcorrect uncertainty\twrong uncertainty\terror AUROC\ttop-%g%% error recall\t\n", top)
	for _, r := range e.Reliability {
		name := string(r.Kind)
		if r.Default {
			name += " (default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name, num4(r.MeanCorrect), num4(r.MeanWrong), num4(r.AUROC), pct(r.TopRecall))
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// jsonNum is a float that encodes NaN as null (JSON has no NaN).
type jsonNum float64

func (v jsonNum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(v))
}

func jsonNums(v []float64) []jsonNum {
	out := make([]jsonNum, len(v))
	for i, x := range v {
		out[i] = jsonNum(x)
	}
	return out
}

type accuracyJSON struct {
	OA        jsonNum   `json:"oa"`
	AA        jsonNum   `json:"aa"`
	Kappa     jsonNum   `json:"kappa"`
	PerClass  []jsonNum `json:"per_class"`
	Support   []int64   `json:"support"`
	Confusion [][]int64 `json:"confusion"`
}

func toAccuracyJSON(a model.Accuracy) accuracyJSON {
	cm := make([][]int64, a.Confusion.Classes)
	for t := range cm {
		cm[t] = slices.Clone(a.Confusion.Counts[t*a.Confusion.Classes : (t+1)*a.Confusion.Classes])
	}
	return accuracyJSON{OA: jsonNum(a.OA), AA: jsonNum(a.AA), Kappa: jsonNum(a.Kappa),
		PerClass: jsonNums(a.PerClass), Support: a.Support, Confusion: cm}
}

type classJSON struct {
	Value int    `json:"value"`
	Name  string `json:"name"`
}

func toClassesJSON(cs []model.Class) []classJSON {
	out := make([]classJSON, len(cs))
	for i, c := range cs {
		out[i] = classJSON{Value: c.Value, Name: c.Name}
	}
	return out
}

// WriteJSON writes the evaluation as one JSON object. Ratios are 0..1;
// undefined values (a class without test pixels) are null; the confusion
// matrices are [truth][prediction] in the order of "classes".
func (e Evaluation) WriteJSON(w io.Writer) error {
	type relJSON struct {
		Kind        string  `json:"kind"`
		Default     bool    `json:"default"`
		Correct     int     `json:"correct_pixels"`
		Wrong       int     `json:"wrong_pixels"`
		MeanCorrect jsonNum `json:"mean_uncertainty_correct"`
		MeanWrong   jsonNum `json:"mean_uncertainty_wrong"`
		AUROC       jsonNum `json:"error_auroc"`
		TopRecall   jsonNum `json:"top_error_recall"`
		TopFraction float64 `json:"top_fraction"`
	}
	out := struct {
		Model          string               `json:"model_checksum"`
		Backend        string               `json:"backend"`
		Ablation       string               `json:"ablation"`
		Classes        []classJSON          `json:"classes"`
		Rows           int                  `json:"rows"`
		Cols           int                  `json:"cols"`
		TestPixels     int                  `json:"test_pixels"`
		TrainExcluded  int                  `json:"train_pixels_excluded"`
		Recovery       model.RecoveryParams `json:"recovery"`
		Raw            accuracyJSON         `json:"without_recovery"`
		Recovered      accuracyJSON         `json:"with_recovery"`
		FinalRecovered bool                 `json:"final_with_recovery"`
		ScoredProduct  bool                 `json:"final_from_product,omitempty"`
		Reliability    []relJSON            `json:"reliability"`
		InferenceS     float64              `json:"inference_seconds"`
		Warnings       []string             `json:"warnings,omitempty"`
		Unseen         []int32              `json:"unseen_classes,omitempty"`
	}{
		Model: e.ModelChecksum, Backend: e.Backend, Ablation: string(e.Ablation), Classes: toClassesJSON(e.Classes),
		Rows: e.Rows, Cols: e.Cols, TestPixels: e.TestPixels, TrainExcluded: e.TrainPixelsExcluded,
		Recovery: e.Recovery, Raw: toAccuracyJSON(e.Raw), Recovered: toAccuracyJSON(e.Recovered),
		FinalRecovered: e.FinalRecovered, ScoredProduct: e.ScoredProduct, InferenceS: e.InferenceTime.Seconds(), Warnings: e.Warnings,
		Unseen: e.UnseenClasses,
	}
	for _, r := range e.Reliability {
		out.Reliability = append(out.Reliability, relJSON{Kind: string(r.Kind), Default: r.Default,
			Correct: r.Correct, Wrong: r.Wrong, MeanCorrect: jsonNum(r.MeanCorrect), MeanWrong: jsonNum(r.MeanWrong),
			AUROC: jsonNum(r.AUROC), TopRecall: jsonNum(r.TopRecall), TopFraction: r.TopFraction})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// errNoRuns is returned by an experiment asked for fewer than one run.
var errNoRuns = errors.New("runs must be at least 1")

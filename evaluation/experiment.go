package evaluation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
)

// ExperimentOptions configure RunExperiment: the paper's protocol of
// repeated runs with consecutive seeds on one split.
type ExperimentOptions struct {
	Runs      int   // runs per variant (0 = 10)
	FirstSeed int64 // run i uses FirstSeed+i (0 = model.DefaultSeed, 202501)
	// Ablation adds the paper's ablation variants: Base, w/o EC, w/o RC
	// (gate fixed, G = 1) and w/o recovery (the full network's labels
	// without the AvgPool recovery)
	// beside the full model. w/o RC is the full network evaluated without
	// the recovery step, so it reuses the full model's runs.
	Ablation bool
	Train    model.TrainOptions // everything but Seed and Config.Ablation, which each run sets
	Eval     EvalOptions
	// Progress, when set, is called after every training epoch with an
	// Event of Stage "experiment": the epochs done over all the
	// experiment's trainings, the training as the Subject ("full run 2/5
	// seed 8") and its epochs as the parts, with the epoch's metrics.
	Progress progress.Func
	Logger   *slog.Logger // nil = discard
}

// trainingProgress is the model.TrainOptions.Progress of the training
// subject (a variant's run), the experiment's trainings done before it of
// trainings: it reports each epoch to report as the experiment's; nil when
// report is.
func trainingProgress(report progress.Func, subject string, done, trainings int) progress.Func {
	if report == nil {
		return nil
	}
	return func(e progress.Event) {
		report(progress.Event{Stage: "experiment", Subject: subject,
			Done: int64(done)*e.Total + e.Done, Total: int64(trainings) * e.Total, Unit: e.Unit,
			Part: int(e.Done), Parts: int(e.Total), Elapsed: e.Elapsed, ETA: e.ETA,
			Message: subject + " " + e.Message, Metrics: e.Metrics})
	}
}

// runSubject names a training of an experiment: "full run 2/5 seed 8".
func runSubject(variant model.Ablation, run, runs int, seed int64) string {
	return fmt.Sprintf("%s run %d/%d seed %d", variant, run, runs, seed)
}

// RunResult is one run of one variant.
type RunResult struct {
	Variant  model.Ablation
	Seed     int64
	Accuracy model.Accuracy // of the variant's final labels on the test pixels
	// TrainTime is the wall time of model.Train; InferenceTime that of a
	// full-scene Predict on a warm predictor, InferenceColdTime of the first
	// (compiling) one.
	TrainTime, InferenceTime, InferenceColdTime time.Duration
	// Reliability is the error AUROC of each reliability candidate.
	Reliability map[model.ReliabilityKind]float64
}

// Stat is a mean and standard deviation over runs. Std is the population
// standard deviation (divisor n), as numpy's default computes it.
type Stat struct{ Mean, Std float64 }

func statOf(v []float64) Stat {
	var vals []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return Stat{math.NaN(), math.NaN()}
	}
	m := 0.0
	for _, x := range vals {
		m += x
	}
	m /= float64(len(vals))
	s := 0.0
	for _, x := range vals {
		s += (x - m) * (x - m)
	}
	return Stat{Mean: m, Std: math.Sqrt(s / float64(len(vals)))}
}

// VariantSummary aggregates a variant's runs.
type VariantSummary struct {
	Variant                        model.Ablation
	Label                          string // the paper's column title
	Runs                           []RunResult
	OA, AA, Kappa                  Stat
	PerClass                       []Stat // by dense class index
	TrainSeconds, InferenceSeconds Stat
	Reliability                    map[model.ReliabilityKind]Stat // error AUROC
}

// Experiment is the result of RunExperiment.
type Experiment struct {
	Classes    []model.Class
	TestPixels int
	Backend    string
	FirstSeed  int64
	Runs       int
	Variants   []VariantSummary // in the order of the paper's table
}

// variantLabel is the paper's column title of each variant.
func variantLabel(v model.Ablation) string {
	switch v {
	case model.AblationBase:
		return "Base"
	case model.AblationNoEC:
		return "w/o EC"
	case model.AblationNoRC:
		return "w/o RC"
	case model.AblationNoRecovery:
		return "w/o recovery"
	}
	return "PNEC-Mamba"
}

// RunExperimentFiles reads the scene, labels and optional fixed split and runs the experiment.
func RunExperimentFiles(ctx context.Context, scene, labels, trainMask string, opts ExperimentOptions) (Experiment, error) {
	in, err := readInputs(ctx, scene, labels, nil)
	if err != nil {
		return Experiment{}, err
	}
	if trainMask != "" {
		if opts.Train.TrainMask, err = readTrainMask(ctx, trainMask, labels, in); err != nil {
			return Experiment{}, err
		}
	}
	return RunExperiment(ctx, in.scene, in.labels, opts)
}

// RunExperiment trains and evaluates opts.Runs models per variant on s with
// seeds FirstSeed, FirstSeed+1, ... and summarises them.
func RunExperiment(ctx context.Context, s model.Scene, labels []int32, opts ExperimentOptions) (Experiment, error) {
	if opts.Runs == 0 {
		opts.Runs = 10
	}
	if opts.Runs < 1 {
		return Experiment{}, fmt.Errorf("experiment: %w", errNoRuns)
	}
	if opts.FirstSeed == 0 {
		opts.FirstSeed = model.DefaultSeed
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	trained := []model.Ablation{model.AblationFull}
	if opts.Ablation {
		trained = []model.Ablation{model.AblationBase, model.AblationNoEC, model.AblationNoRC, model.AblationFull}
	}
	results := map[model.Ablation][]RunResult{}
	exp := Experiment{FirstSeed: opts.FirstSeed, Runs: opts.Runs}
	done, total := 0, len(trained)*opts.Runs
	for _, variant := range trained {
		for run := 0; run < opts.Runs; run++ {
			seed := opts.FirstSeed + int64(run)
			to := opts.Train
			to.Seed = seed
			to.Config.Ablation = variant
			to.Progress = trainingProgress(opts.Progress, runSubject(variant, run+1, opts.Runs, seed), done, total)
			start := time.Now()
			m, err := model.Train(ctx, s, labels, to)
			if err != nil {
				return Experiment{}, fmt.Errorf("%s run %d (seed %d): %w", variantLabel(variant), run+1, seed, err)
			}
			trainTime := time.Since(start)
			ev, cold, err := evaluateTimed(ctx, m, s, labels, opts.Eval)
			if err != nil {
				return Experiment{}, fmt.Errorf("%s run %d (seed %d): %w", variantLabel(variant), run+1, seed, err)
			}
			done++
			exp.Classes, exp.TestPixels, exp.Backend = ev.Classes, ev.TestPixels, ev.Backend
			r := RunResult{Variant: variant, Seed: seed, Accuracy: ev.Recovered, TrainTime: trainTime,
				InferenceTime: ev.InferenceTime, InferenceColdTime: cold, Reliability: aurocs(ev)}
			results[variant] = append(results[variant], r)
			log.Info("run done", "variant", variantLabel(variant), "run", run+1, "seed", seed,
				"oa", pct(r.Accuracy.OA), "train_s", fmt.Sprintf("%.1f", trainTime.Seconds()),
				"inference_s", fmt.Sprintf("%.2f", r.InferenceTime.Seconds()))
			if variant == model.AblationFull && opts.Ablation {
				// w/o recovery: the same network, labels without the AvgPool recovery.
				nr := r
				nr.Variant = model.AblationNoRecovery
				nr.Accuracy = ev.Raw
				nr.Reliability = nil
				results[model.AblationNoRecovery] = append(results[model.AblationNoRecovery], nr)
			}
		}
	}
	order := []model.Ablation{model.AblationFull}
	if opts.Ablation {
		order = []model.Ablation{model.AblationBase, model.AblationNoEC, model.AblationNoRC, model.AblationNoRecovery, model.AblationFull}
	}
	for _, v := range order {
		exp.Variants = append(exp.Variants, summarize(v, results[v], len(exp.Classes)))
	}
	return exp, nil
}

// evaluateTimed predicts twice on one predictor, so that the reported
// inference time is that of a compiled network, and scores the second.
func evaluateTimed(ctx context.Context, m *model.Model, s model.Scene, labels []int32, opts EvalOptions) (Evaluation, time.Duration, error) {
	p, err := model.NewPredictor(m, opts.Backend)
	if err != nil {
		return Evaluation{}, 0, err
	}
	defer p.Close()
	start := time.Now()
	if _, err := p.Predict(ctx, s); err != nil {
		return Evaluation{}, 0, err
	}
	cold := time.Since(start)
	start = time.Now()
	pred, err := p.Predict(ctx, s)
	if err != nil {
		return Evaluation{}, 0, err
	}
	warm := time.Since(start)
	ev, err := Score(SpecOf(m), pred, s, labels, opts)
	if err != nil {
		return Evaluation{}, 0, err
	}
	ev.Backend = p.Backend()
	ev.InferenceTime = warm
	return ev, cold, nil
}

func aurocs(ev Evaluation) map[model.ReliabilityKind]float64 {
	out := map[model.ReliabilityKind]float64{}
	for _, r := range ev.Reliability {
		out[r.Kind] = r.AUROC
	}
	return out
}

func summarize(v model.Ablation, runs []RunResult, classes int) VariantSummary {
	col := func(f func(RunResult) float64) Stat {
		x := make([]float64, len(runs))
		for i, r := range runs {
			x[i] = f(r)
		}
		return statOf(x)
	}
	s := VariantSummary{Variant: v, Label: variantLabel(v), Runs: runs,
		OA:               col(func(r RunResult) float64 { return r.Accuracy.OA }),
		AA:               col(func(r RunResult) float64 { return r.Accuracy.AA }),
		Kappa:            col(func(r RunResult) float64 { return r.Accuracy.Kappa }),
		TrainSeconds:     col(func(r RunResult) float64 { return r.TrainTime.Seconds() }),
		InferenceSeconds: col(func(r RunResult) float64 { return r.InferenceTime.Seconds() }),
	}
	for k := 0; k < classes; k++ {
		s.PerClass = append(s.PerClass, col(func(r RunResult) float64 { return r.Accuracy.PerClass[k] }))
	}
	if len(runs) > 0 && runs[0].Reliability != nil {
		s.Reliability = map[model.ReliabilityKind]Stat{}
		for _, kind := range append(slices.Clone(model.ReliabilityKinds), model.SpectralReliabilityKinds...) {
			if _, ok := runs[0].Reliability[kind]; !ok {
				continue
			}
			s.Reliability[kind] = col(func(r RunResult) float64 { return r.Reliability[kind] })
		}
	}
	return s
}

func pm(s Stat, scale float64, prec int) string {
	if math.IsNaN(s.Mean) {
		return "-"
	}
	return fmt.Sprintf("%.*f ± %.*f", prec, scale*s.Mean, prec, scale*s.Std)
}

// WriteText prints the experiment in the layout of the paper's class-wise
// tables (one column per variant; class rows are means, OA, AA and kappa
// mean ± std, in percent), then the times and every run.
func (e Experiment) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs per variant, seeds %d..%d, backend %s, %d test pixels; mean ± std (population) over runs\n\n",
		e.Runs, e.FirstSeed, e.FirstSeed+int64(e.Runs)-1, e.Backend, e.TestPixels)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "Class\t")
	for _, v := range e.Variants {
		fmt.Fprintf(tw, "%s\t", v.Label)
	}
	fmt.Fprintln(tw)
	for k, c := range e.Classes {
		fmt.Fprintf(tw, "%d %s\t", c.Value, c.Name)
		for _, v := range e.Variants {
			if math.IsNaN(v.PerClass[k].Mean) {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%.2f\t", 100*v.PerClass[k].Mean)
			}
		}
		fmt.Fprintln(tw)
	}
	rows := []struct {
		name string
		get  func(VariantSummary) string
	}{
		{"OA", func(v VariantSummary) string { return pm(v.OA, 100, 2) }},
		{"AA", func(v VariantSummary) string { return pm(v.AA, 100, 2) }},
		{"kappa", func(v VariantSummary) string { return pm(v.Kappa, 100, 2) }},
		{"train time (s)", func(v VariantSummary) string { return pm(v.TrainSeconds, 1, 2) }},
		{"inference time (s)", func(v VariantSummary) string { return pm(v.InferenceSeconds, 1, 3) }},
	}
	for _, kind := range append(slices.Clone(model.ReliabilityKinds), model.SpectralReliabilityKinds...) {
		kind := kind
		rows = append(rows, struct {
			name string
			get  func(VariantSummary) string
		}{"error AUROC, " + string(kind), func(v VariantSummary) string {
			st, ok := v.Reliability[kind]
			if !ok {
				return "-"
			}
			return pm(st, 1, 4)
		}})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.name)
		for _, v := range e.Variants {
			fmt.Fprintf(tw, "%s\t", r.get(v))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(&b, "\nruns:")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tseed\tOA\tAA\tkappa\ttrain s\tinference s\tfirst inference s\t")
	for _, v := range e.Variants {
		for _, r := range v.Runs {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.2f\t%.3f\t%.3f\t\n", v.Label, r.Seed, pct(r.Accuracy.OA), pct(r.Accuracy.AA),
				pct(r.Accuracy.Kappa), r.TrainTime.Seconds(), r.InferenceTime.Seconds(), r.InferenceColdTime.Seconds())
		}
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the experiment as one JSON object (ratios 0..1, times in
// seconds, NaN as null).
func (e Experiment) WriteJSON(w io.Writer) error {
	type statJSON struct {
		Mean jsonNum `json:"mean"`
		Std  jsonNum `json:"std"`
	}
	st := func(s Stat) statJSON { return statJSON{jsonNum(s.Mean), jsonNum(s.Std)} }
	type runJSON struct {
		Seed       int64              `json:"seed"`
		Accuracy   accuracyJSON       `json:"accuracy"`
		TrainS     float64            `json:"train_seconds"`
		InferS     float64            `json:"inference_seconds"`
		InferColdS float64            `json:"first_inference_seconds"`
		AUROC      map[string]jsonNum `json:"error_auroc,omitempty"`
	}
	type variantJSON struct {
		Variant  string              `json:"variant"`
		Label    string              `json:"label"`
		OA       statJSON            `json:"oa"`
		AA       statJSON            `json:"aa"`
		Kappa    statJSON            `json:"kappa"`
		PerClass []statJSON          `json:"per_class"`
		TrainS   statJSON            `json:"train_seconds"`
		InferS   statJSON            `json:"inference_seconds"`
		AUROC    map[string]statJSON `json:"error_auroc,omitempty"`
		Runs     []runJSON           `json:"runs"`
	}
	out := struct {
		Classes    []classJSON   `json:"classes"`
		TestPixels int           `json:"test_pixels"`
		Backend    string        `json:"backend"`
		FirstSeed  int64         `json:"first_seed"`
		Runs       int           `json:"runs"`
		StdNote    string        `json:"std"`
		Variants   []variantJSON `json:"variants"`
	}{Classes: toClassesJSON(e.Classes), TestPixels: e.TestPixels, Backend: e.Backend, FirstSeed: e.FirstSeed,
		Runs: e.Runs, StdNote: "population (divisor n)"}
	for _, v := range e.Variants {
		vj := variantJSON{Variant: string(v.Variant), Label: v.Label, OA: st(v.OA), AA: st(v.AA), Kappa: st(v.Kappa),
			TrainS: st(v.TrainSeconds), InferS: st(v.InferenceSeconds)}
		for _, s := range v.PerClass {
			vj.PerClass = append(vj.PerClass, st(s))
		}
		if v.Reliability != nil {
			vj.AUROC = map[string]statJSON{}
			for k, s := range v.Reliability {
				vj.AUROC[string(k)] = st(s)
			}
		}
		for _, r := range v.Runs {
			rj := runJSON{Seed: r.Seed, Accuracy: toAccuracyJSON(r.Accuracy), TrainS: r.TrainTime.Seconds(),
				InferS: r.InferenceTime.Seconds(), InferColdS: r.InferenceColdTime.Seconds()}
			if r.Reliability != nil {
				rj.AUROC = map[string]jsonNum{}
				for k, a := range r.Reliability {
					rj.AUROC[string(k)] = jsonNum(a)
				}
			}
			vj.Runs = append(vj.Runs, rj)
		}
		out.Variants = append(out.Variants, vj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

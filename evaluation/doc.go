// Package evaluation trains models and measures them: it reads a labelled
// scene into memory (ReadScene, ReadLabels, class names), trains a model on
// it (Train), scores a model on a scene's test pixels (Evaluate: overall,
// average and per-class accuracy, kappa, and how well each reliability kind
// ranks the errors), and runs the paper's protocol of repeated seeded runs
// and ablations (RunExperiment), and the acquisition-shift protocol
// (RunShift: the scene changed as a new acquisition would be, the drift
// verdicts its products would carry, a spatially disjoint split).
//
// Whole scenes are held in memory here, unlike the tiled classification of
// package processor: training is full-image by design (the network's scan
// runs over the whole scene), and labelled benchmark scenes are small.
//
// Typical use:
//
//	res, err := evaluation.Train(ctx, evaluation.TrainRequest{Scene: "salinas.tif", Labels: "salinas_gt.tif"})
//	err = res.Model.Save("salinas.pnec")
//	ev, err := evaluation.EvaluateFiles(ctx, res.Model, "salinas.tif", "salinas_gt.tif", evaluation.EvalOptions{})
package evaluation

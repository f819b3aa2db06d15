// Package pipelines runs pnec over many scenes: the nightly batch.
//
// Run expands inputs (GDAL dataset names, globs, directories, STAC Items,
// ItemCollections, Catalogs and Collections, local or over HTTP), keeps a
// deterministic shard of them (Shard, for Kubernetes Indexed Jobs), skips
// scenes whose product is up to date, classifies the rest with
// processor.Classifier (one per parallel job, sharing one loaded model), and
// writes beside each COG product a STAC Item (made by package stac) that
// also records what the product was made from, so that a rerun knows what
// to skip.
//
// Failure safety: a product only ever appears at its final path by an atomic
// rename (the processor's and this package's writers both write a temporary
// file beside the target first); a per-scene lock file keeps two processes
// (or a restarted one and a slow old one) off the same scene; temporary files
// left behind by a killed run are removed when their scene's lock is free.
// One scene's failure is reported and does not stop the others.
//
// Around the batch: which model STAC Item the products point at, written
// when the run must (modelitem.go); running a STAC task payload (RunPayload,
// payload.go); per-scene areas of interest (Config.Mask, mask.go); whether
// the class probabilities asked for are there (probabilities.go). The STAC
// documents themselves (Items, the model's MLM Item, Collections, payloads)
// are package stac's.
//
// The package reaches GDAL only through geo and processor (never godal or
// GoMLX directly); it fetches STAC documents given as http(s) URLs itself
// (net/http) and hands their assets to GDAL as /vsicurl/, /vsis3/, /vsigs/
// or /vsiaz/ names. Output directories must be on a local or shared POSIX
// file system: the per-scene locks are flock(2) locks. The Example shows the
// library use; processor.Classifier is the embedding API for one scene.
package pipelines

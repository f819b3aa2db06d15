package stac

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	gostac "github.com/planetlabs/go-stac"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
)

// Schemas of the extensions the model's Item uses besides those of the
// products (shipped under testdata/stac/schemas).
const (
	MLMSchema  = "https://stac-extensions.github.io/mlm/v1.5.2/schema.json"
	FileSchema = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
	EOSchema   = "https://stac-extensions.github.io/eo/v1.1.0/schema.json"
)

// Model Item constants: the model's architecture as MLM names it, the
// artifact type of a pnec model file, and the asset key.
const (
	MLMArchitecture  = "PNEC-Mamba"
	MLMArtifactType  = "pnec.Model.Save"
	modelAssetKey    = "model"
	modelMediaType   = "application/octet-stream"
	gomlxModule      = "github.com/gomlx/gomlx"
	geojsonMediaType = "application/geo+json"
)

// ModelItemPath is where the STAC Item of the model at modelPath goes:
// beside it, MODEL.pnec -> MODEL.pnec.json (the name says whose Item it
// is, and cannot be taken for a product's KEY.json).
func ModelItemPath(modelPath string) string { return modelPath + ".json" }

// ModelItemParams is what BuildModelItem needs.
type ModelItemParams struct {
	Model     *model.Model
	ModelPath string // the model file: the asset, relative to the Item when beside it
	ItemPath  string // where the Item goes
	// Name is the mlm:name (CheckModelName); "" = ModelName(ModelPath).
	Name string
	// BaseURL is the public URL of the Item's directory; "" = none, and
	// the Item has no self link (STAC wants it absolute).
	BaseURL string
	// TrainInfo is the training scene as GDAL opened it (footprint, time);
	// nil when it could not be opened: the geometry is then null.
	TrainInfo *geo.Info
	// Datetime is the model's time: when it was trained (pnec train), or
	// the model file's modification time (pnec model-item).
	Datetime time.Time
	Now      time.Time
}

// mlmNamePattern is the pattern MLM v1.5.2 sets for mlm:name, with the
// schema's \s kept to the space.
var mlmNamePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.\- ]+[a-zA-Z0-9]$`)

// ModelName is the model's mlm:name made from its file name: the name
// without the extension, each character MLM does not allow replaced by
// '_', separators at its end dropped, and "pnec-" put before a name that
// would not start with a letter or would be shorter than three characters
// (2024_model.pnec -> pnec-2024_model, m.pnec -> pnec-m), so that the name
// always passes MLM v1.5.2's pattern ^[a-zA-Z][a-zA-Z0-9_.\-\s]+[a-zA-Z0-9]$.
func ModelName(modelPath string) string {
	b := filepath.Base(modelPath)
	var n strings.Builder
	for _, r := range strings.TrimSuffix(b, filepath.Ext(b)) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-', r == ' ':
			n.WriteRune(r)
		default:
			n.WriteByte('_')
		}
	}
	name := strings.TrimRight(n.String(), "_.- ")
	if name == "" {
		return "model"
	}
	if !mlmNamePattern.MatchString(name) {
		name = "pnec-" + name
	}
	return name
}

// CheckModelName refuses an mlm:name MLM v1.5.2 does not allow.
func CheckModelName(name string) error {
	if !mlmNamePattern.MatchString(name) {
		return fmt.Errorf("mlm:name %q: MLM wants 3 characters or more, a letter first, a letter or digit last, and only letters, digits, '_', '.', '-' and spaces", name)
	}
	return nil
}

// BuildModelItem makes the STAC Item of a model with the Machine Learning
// Model extension (v1.5.2): name, architecture, tasks, the input (bands
// with wavelengths when known, shape, the per-band scaling the model
// applies), the output (class probabilities with the classes), the model
// file as asset with its checksum and size (file extension), the training
// scene and labels as derived_from links and the training accuracy.
func BuildModelItem(p ModelItemParams) (*gostac.Item, error) {
	m := p.Model
	if m == nil {
		return nil, fmt.Errorf("model item: no model")
	}
	itemDir := filepath.Dir(p.ItemPath)
	sum, size, err := FileChecksum(p.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("model item: %w", err)
	}
	name := p.Name
	if name == "" {
		name = ModelName(p.ModelPath)
	} else if err := CheckModelName(name); err != nil {
		return nil, fmt.Errorf("model item: %w", err)
	}
	t := tree{root: itemDir, dir: itemDir}
	bandNames := make([]string, m.Bands())
	for i := range bandNames {
		bandNames[i] = fmt.Sprintf("b%d", i+1)
	}
	item := &gostac.Item{Version: Version, Id: modelItemID(name, m.Checksum()), Properties: modelProperties(p, name, bandNames, t)}
	if ti := p.TrainInfo; ti != nil {
		// MLM's best practice: the extent of the data the model was trained on.
		if g, bbox := footprint(ti.FootprintWGS84); g != nil {
			item.Geometry, item.Bbox = g, bbox
		}
	}
	item.Links = modelLinks(p, t)
	fields, exts := modelAssetFields(m, bandNames, sum, size)
	item.Extensions = exts
	item.Assets = map[string]*gostac.Asset{
		modelAssetKey: {
			Href:        t.href(p.ModelPath),
			Type:        modelMediaType,
			Title:       "pnec model file",
			Description: "PNEC-Mamba weights, prototype bank, normalisation, classes and training record (pnec model format 2); load with pnec or github.com/pnec/pnec/model.Load.",
			Roles:       []string{"mlm:model", "mlm:checkpoint", "data"},
			Extensions:  []gostac.Extension{&fieldsExt{uri: MLMSchema, fields: fields}},
		},
	}
	return item, nil
}

// modelProperties are the model Item's properties: what MLM asks of a
// model (name, architecture, tasks, framework, input, output,
// hyperparameters) and what training recorded.
func modelProperties(p ModelItemParams, name string, bandNames []string, t tree) map[string]any {
	m := p.Model
	props := map[string]any{
		"datetime":                    p.Datetime.UTC().Format(time.RFC3339),
		"created":                     p.Now.UTC().Format(time.RFC3339),
		"title":                       fmt.Sprintf("PNEC-Mamba model %s", name),
		"description":                 fmt.Sprintf("PNEC-Mamba land-cover classifier of %d-band hyperspectral scenes into %d classes, trained with pnec train; pnec classify and pnec batch run it from the model file %s.", m.Bands(), len(m.Classes()), filepath.Base(p.ModelPath)),
		"mlm:name":                    name,
		"mlm:architecture":            MLMArchitecture,
		"mlm:tasks":                   []string{"semantic-segmentation"},
		"mlm:framework":               "GoMLX",
		"mlm:total_parameters":        m.ParameterCount(),
		"mlm:pretrained":              false,
		"mlm:pretrained_source":       nil,
		"mlm:batch_size_suggestion":   1,
		"mlm:accelerator":             nil,
		"mlm:accelerator_constrained": false,
		"mlm:accelerator_summary":     "any CPU (pure-Go backend) or an XLA PJRT device such as a CUDA GPU",
		"mlm:input":                   mlmInput(m, bandNames),
		"mlm:output":                  mlmOutput(m),
		"mlm:hyperparameters":         mlmHyperparameters(m),
		"processing:software":         map[string]string{"pnec": versionOr(m.Version())},
		PropModelChecksum:             m.Checksum(),
		"pnec:trained_backend":        m.Backend(),
	}
	if v := moduleVersion(gomlxModule); v != "" {
		props["mlm:framework_version"] = strings.TrimPrefix(v, "v") // MLM wants SemVer without Go's "v"
	}
	if acc := m.TrainAccuracy(); acc > 0 && !math.IsNaN(acc) {
		// What training measured: the accuracy on the training pixels
		// (pnec evaluate measures test accuracy).
		props["pnec:train_accuracy"] = acc
		props["pnec:final_loss"] = m.FinalLoss()
	}
	if prov := m.Provenance(); prov.Scene != "" {
		props["processing:lineage"] = fmt.Sprintf("trained by pnec train on %s with labels %s", t.href(prov.Scene), t.href(prov.Labels))
	}
	return props
}

// mlmInput is mlm:input: the scene's bands, their shape and the scaling
// the model applies to them.
func mlmInput(m *model.Model, bandNames []string) []map[string]any {
	lo, hi := m.Stretch()
	scaling := make([]map[string]any, len(lo))
	for i := range lo {
		scaling[i] = map[string]any{"type": "min-max", "minimum": float64(lo[i]), "maximum": float64(hi[i])}
	}
	desc := "The scene's raw band values (any GDAL data type, nodata honoured); pnec applies the scaling itself: (v - minimum) / (maximum - minimum) per band, clipped to 0..1 (the training scene's 2nd and 98th percentiles). Whole scenes or overlapping tiles of any size; sides are padded to a multiple of 4."
	if n := m.Config().InputLevels; n != 0 {
		desc = strings.Replace(desc, "clipped to 0..1", fmt.Sprintf("clipped to 0..1, then quantised to %d levels, floor(x (%d - 1)) / (%d - 1)", n, n, n), 1)
	}
	return []map[string]any{{
		"name":        "hyperspectral scene",
		"description": desc,
		"bands":       bandNames,
		"input": map[string]any{
			"shape":     []int{1, m.Bands(), -1, -1},
			"dim_order": []string{"batch", "bands", "height", "width"},
			"data_type": "float32",
		},
		"value_scaling":           scaling,
		"resize_type":             "pad",
		"pre_processing_function": nil,
	}}
}

// mlmOutput is mlm:output: the class probabilities, the classes, and the
// recovery and argmax that make the product of them.
func mlmOutput(m *model.Model) []map[string]any {
	var geoClasses []geo.ClassInfo
	for _, c := range m.Classes() {
		geoClasses = append(geoClasses, geo.ClassInfo{Value: c.Value, Name: c.Name, Color: c.Color})
	}
	rec := m.Recovery()
	return []map[string]any{{
		"name":        "class probabilities",
		"description": "Calibrated class probabilities per pixel; the product's class band is their argmax after the AvgPool recovery, its reliability band the score the product names (PNEC_RELIABILITY).",
		"tasks":       []string{"semantic-segmentation"},
		"result": map[string]any{
			"shape":     []int{1, len(m.Classes()), -1, -1},
			"dim_order": []string{"batch", "class", "height", "width"},
			"data_type": "float32",
		},
		"classification:classes": ClassObjects(geoClasses),
		"post_processing_function": map[string]any{
			"format":      "pnec",
			"expression":  fmt.Sprintf("avgpool-recovery window=%d eta=%g; argmax", rec.Window, rec.Eta),
			"description": "P_rec = (1 - eta) P + eta AvgPool_window(P) over valid pixels, then the class of the largest probability (pnec classify does it).",
		},
	}}
}

// mlmHyperparameters is mlm:hyperparameters: the network's configuration,
// its training and its recovery.
func mlmHyperparameters(m *model.Model) map[string]any {
	cfg, rec := m.Config(), m.Recovery()
	h := map[string]any{
		"hidden": cfg.Hidden, "d_state": cfg.DState, "expand": cfg.Expand, "head_dim": cfg.HeadDim,
		"encoder": cfg.Encoder, "ablation": string(cfg.Ablation), "epochs": cfg.Epochs, "learning_rate": cfg.LearningRate,
		"ec_warmup_epochs": cfg.ECWarmupEpochs, "gate_floor": cfg.GateFloor,
		"recovery_window": rec.Window, "recovery_eta": rec.Eta,
		"training_pixels": len(m.TrainIndices()),
	}
	if cfg.InputLevels != 0 {
		h["input_levels"] = cfg.InputLevels
	}
	return h
}

// modelLinks: the Item itself (only absolute, with a base URL) and the
// training scene, labels and split as derived_from.
func modelLinks(p ModelItemParams, t tree) []*gostac.Link {
	var links []*gostac.Link
	if self := selfHref(p.BaseURL, p.ItemPath, t.root); self != "" {
		links = append(links, &gostac.Link{Rel: "self", Href: self, Type: geojsonMediaType})
	}
	prov := p.Model.Provenance()
	for _, tr := range []struct{ href, title string }{{prov.Scene, "training scene"}, {prov.Labels, "training labels"}, {prov.TrainMask, "training split (fixed)"}} {
		if tr.href == "" {
			continue
		}
		links = append(links, &gostac.Link{Rel: "derived_from", Href: t.href(tr.href), Type: rasterMediaType(tr.href), Title: tr.title})
	}
	return links
}

// modelAssetFields are the model asset's fields (artifact type, checksum,
// size, bands; eo:bands with wavelengths when every band has one) and the
// extensions the Item declares for them.
func modelAssetFields(m *model.Model, bandNames []string, sum string, size int64) (map[string]any, []gostac.Extension) {
	fields := map[string]any{
		"mlm:artifact_type": MLMArtifactType,
		"file:checksum":     sum,
		"file:size":         size,
		"raster:bands":      namedBands(bandNames),
	}
	exts := []gostac.Extension{declared(MLMSchema), declared(FileSchema), declared(RasterSchema), declared(ProcessingSchema)}
	wl := m.WavelengthsNM()
	if len(wl) != m.Bands() || !allKnown(wl) {
		return fields, exts
	}
	fwhm := m.BandRecord().FWHMNM // every band's or none (model file check)
	eo := make([]map[string]any, len(wl))
	for i, w := range wl {
		eo[i] = map[string]any{"name": bandNames[i], "center_wavelength": w / 1000} // µm
		if len(fwhm) == len(wl) {
			eo[i]["full_width_half_max"] = fwhm[i] / 1000 // µm
		}
	}
	fields["eo:bands"] = eo
	return fields, append(exts, declared(EOSchema))
}

// WriteModelItem builds the model's Item (BuildModelItem) and writes it
// atomically to p.ItemPath.
func WriteModelItem(p ModelItemParams) error {
	item, err := BuildModelItem(p)
	if err != nil {
		return err
	}
	return WriteJSON(p.ItemPath, item)
}

// modelItemID is the model Item's id: its name and the start of its
// checksum, so that retrained models of one name have different ids.
func modelItemID(name, checksum string) string {
	if len(checksum) > 12 {
		checksum = checksum[:12]
	}
	return name + "-" + checksum
}

// FileChecksum is the file's multihash SHA2-256 checksum as the file
// extension writes it (hex: 0x12 0x20 then the digest) and its size.
func FileChecksum(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("checksum %s: %w", path, err)
	}
	return "1220" + hex.EncodeToString(h.Sum(nil)), n, nil
}

// rasterMediaType is the media type of a raster named name when its
// extension says it (GeoTIFF); "" otherwise.
func rasterMediaType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".tif", ".tiff":
		return "image/tiff; application=geotiff"
	}
	return ""
}

func namedBands(names []string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"name": n}
	}
	return out
}

func allKnown(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || x <= 0 {
			return false
		}
	}
	return true
}

// moduleVersion is the version of a module this binary was built with
// ("" when unknown).
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

func versionOr(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

// declared is an extension whose fields the Item holds already: it only
// declares the schema in stac_extensions.
type declared string

func (d declared) URI() string               { return string(d) }
func (declared) Encode(map[string]any) error { return nil }
func (declared) Decode(map[string]any) error { return gostac.ErrExtensionDoesNotApply }

// fieldsExt sets fields in the object it encodes (an asset).
type fieldsExt struct {
	uri    string
	fields map[string]any
}

func (f *fieldsExt) URI() string { return f.uri }
func (f *fieldsExt) Encode(obj map[string]any) error {
	for k, v := range f.fields {
		obj[k] = v
	}
	return nil
}
func (f *fieldsExt) Decode(map[string]any) error { return gostac.ErrExtensionDoesNotApply }

// FileInfo is a file's multihash checksum and size (file extension).
type FileInfo struct {
	Checksum string
	Size     int64
}

// addFileInfo writes file:checksum and file:size into the Item's assets
// that files has and declares the file extension when any has them.
func addFileInfo(item *gostac.Item, files map[string]FileInfo) {
	for key, fi := range files {
		if a, ok := item.Assets[key]; ok {
			a.Extensions = append(a.Extensions, &fieldsExt{uri: FileSchema, fields: map[string]any{"file:checksum": fi.Checksum, "file:size": fi.Size}})
		}
	}
}

// AssetFiles are the checksums and sizes of a product's asset files by
// asset key: the COG, the style and those asked for (Float32 reliability,
// probabilities, thumbnail).
func AssetFiles(product string, floatRel, probabilities, thumbnail bool) (map[string]FileInfo, error) {
	paths := map[string]string{ProductAssetKey: product, styleAssetKey: geo.StylePath(product)}
	if thumbnail {
		paths[ThumbnailAssetKey] = geo.ThumbnailPath(product)
	}
	if floatRel {
		paths[reliabilityAssetKey] = geo.ReliabilityPath(product)
	}
	if probabilities {
		paths[ProbabilitiesAssetKey] = geo.ProbabilitiesPath(product)
	}
	out := make(map[string]FileInfo, len(paths))
	for k, p := range paths {
		sum, n, err := FileChecksum(p)
		if err != nil {
			return nil, err
		}
		out[k] = FileInfo{Checksum: sum, Size: n}
	}
	return out, nil
}

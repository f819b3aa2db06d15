package pipelines

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	stac "github.com/planetlabs/go-stac"

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
func BuildModelItem(p ModelItemParams) (*stac.Item, error) {
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
	cfg := m.Config()
	rec := m.Recovery()
	k := len(m.Classes())
	var geoClasses []geo.ClassInfo
	for _, c := range m.Classes() {
		geoClasses = append(geoClasses, geo.ClassInfo{Value: c.Value, Name: c.Name, Color: c.Color})
	}
	bandNames := make([]string, m.Bands())
	for i := range bandNames {
		bandNames[i] = fmt.Sprintf("b%d", i+1)
	}
	lo, hi := m.Stretch()
	scaling := make([]map[string]any, len(lo))
	for i := range lo {
		scaling[i] = map[string]any{"type": "min-max", "minimum": float64(lo[i]), "maximum": float64(hi[i])}
	}
	prov := m.Provenance()
	inputDesc := "The scene's raw band values (any GDAL data type, nodata honoured); pnec applies the scaling itself: (v - minimum) / (maximum - minimum) per band, clipped to 0..1 (the training scene's 2nd and 98th percentiles). Whole scenes or overlapping tiles of any size; sides are padded to a multiple of 4."
	if n := cfg.InputLevels; n != 0 {
		inputDesc = strings.Replace(inputDesc, "clipped to 0..1", fmt.Sprintf("clipped to 0..1, then quantised to %d levels, floor(x (%d - 1)) / (%d - 1)", n, n, n), 1)
	}
	props := map[string]any{
		"datetime":                    p.Datetime.UTC().Format(time.RFC3339),
		"created":                     p.Now.UTC().Format(time.RFC3339),
		"title":                       fmt.Sprintf("PNEC-Mamba model %s", name),
		"description":                 fmt.Sprintf("PNEC-Mamba land-cover classifier of %d-band hyperspectral scenes into %d classes, trained with pnec train; pnec classify and pnec batch run it from the model file %s.", m.Bands(), k, filepath.Base(p.ModelPath)),
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
		"mlm:input": []map[string]any{{
			"name":        "hyperspectral scene",
			"description": inputDesc,
			"bands":       bandNames,
			"input": map[string]any{
				"shape":     []int{1, m.Bands(), -1, -1},
				"dim_order": []string{"batch", "bands", "height", "width"},
				"data_type": "float32",
			},
			"value_scaling":           scaling,
			"resize_type":             "pad",
			"pre_processing_function": nil,
		}},
		"mlm:output": []map[string]any{{
			"name":        "class probabilities",
			"description": "Calibrated class probabilities per pixel; the product's class band is their argmax after the AvgPool recovery, its reliability band the score the product names (PNEC_RELIABILITY).",
			"tasks":       []string{"semantic-segmentation"},
			"result": map[string]any{
				"shape":     []int{1, k, -1, -1},
				"dim_order": []string{"batch", "class", "height", "width"},
				"data_type": "float32",
			},
			"classification:classes": ClassObjects(geoClasses),
			"post_processing_function": map[string]any{
				"format":      "pnec",
				"expression":  fmt.Sprintf("avgpool-recovery window=%d eta=%g; argmax", rec.Window, rec.Eta),
				"description": "P_rec = (1 - eta) P + eta AvgPool_window(P) over valid pixels, then the class of the largest probability (pnec classify does it).",
			},
		}},
		"mlm:hyperparameters": map[string]any{
			"hidden": cfg.Hidden, "d_state": cfg.DState, "expand": cfg.Expand, "head_dim": cfg.HeadDim,
			"encoder": cfg.Encoder, "ablation": string(cfg.Ablation), "epochs": cfg.Epochs, "learning_rate": cfg.LearningRate,
			"ec_warmup_epochs": cfg.ECWarmupEpochs, "gate_floor": cfg.GateFloor,
			"recovery_window": rec.Window, "recovery_eta": rec.Eta,
			"training_pixels": len(m.TrainIndices()),
		},
		"processing:software":  map[string]string{"pnec": versionOr(m.Version())},
		propModelChecksum:      m.Checksum(),
		"pnec:trained_backend": m.Backend(),
	}
	if cfg.InputLevels != 0 {
		props["mlm:hyperparameters"].(map[string]any)["input_levels"] = cfg.InputLevels
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
	if prov.Scene != "" {
		props["processing:lineage"] = fmt.Sprintf("trained by pnec train on %s with labels %s", portableHref(prov.Scene, itemDir, itemDir), portableHref(prov.Labels, itemDir, itemDir))
	}
	item := &stac.Item{Version: STACVersion, Id: modelItemID(name, m.Checksum()), Properties: props}
	if ti := p.TrainInfo; ti != nil && len(ti.FootprintWGS84) > 0 && len(ti.FootprintWGS84[0]) >= 4 {
		// MLM's best practice: the extent of the data the model was trained on.
		var fp orb.Polygon
		for _, ring := range ti.FootprintWGS84 {
			r := append(orb.Ring(nil), ring...)
			if r[0] != r[len(r)-1] {
				r = append(r, r[0])
			}
			fp = append(fp, r)
		}
		item.Geometry = geojson.NewGeometry(fp)
		b := ti.FootprintWGS84.Bound()
		item.Bbox = []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
	}
	if self := selfHref(p.BaseURL, p.ItemPath, itemDir); self != "" {
		item.Links = append(item.Links, &stac.Link{Rel: "self", Href: self, Type: geojsonMediaType})
	}
	for _, tr := range []struct{ href, title string }{{prov.Scene, "training scene"}, {prov.Labels, "training labels"}, {prov.TrainMask, "training split (fixed)"}} {
		if tr.href == "" {
			continue
		}
		item.Links = append(item.Links, &stac.Link{Rel: "derived_from", Href: portableHref(tr.href, itemDir, itemDir), Type: rasterMediaType(tr.href), Title: tr.title})
	}
	assetFields := map[string]any{
		"mlm:artifact_type": MLMArtifactType,
		"file:checksum":     sum,
		"file:size":         size,
		"raster:bands":      namedBands(bandNames),
	}
	exts := []stac.Extension{declared(MLMSchema), declared(FileSchema), declared(RasterSchema), declared(ProcessingSchema)}
	if wl := m.WavelengthsNM(); len(wl) == m.Bands() && allKnown(wl) {
		fwhm := m.BandRecord().FWHMNM // every band's or none (model file check)
		eo := make([]map[string]any, len(wl))
		for i, w := range wl {
			eo[i] = map[string]any{"name": bandNames[i], "center_wavelength": w / 1000} // µm
			if len(fwhm) == len(wl) {
				eo[i]["full_width_half_max"] = fwhm[i] / 1000 // µm
			}
		}
		assetFields["eo:bands"] = eo
		exts = append(exts, declared(EOSchema))
	}
	item.Extensions = exts
	item.Assets = map[string]*stac.Asset{
		modelAssetKey: {
			Href:        portableHref(p.ModelPath, itemDir, itemDir),
			Type:        modelMediaType,
			Title:       "pnec model file",
			Description: "PNEC-Mamba weights, prototype bank, normalisation, classes and training record (pnec model format 2); load with pnec or github.com/pnec/pnec/model.Load.",
			Roles:       []string{"mlm:model", "mlm:checkpoint", "data"},
			Extensions:  []stac.Extension{&fieldsExt{uri: MLMSchema, fields: assetFields}},
		},
	}
	return item, nil
}

// WriteModelItem builds the model's Item (BuildModelItem) and writes it
// atomically to p.ItemPath.
func WriteModelItem(p ModelItemParams) error {
	item, err := BuildModelItem(p)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(item, "", "  ")
	if err != nil {
		return fmt.Errorf("model item: %w", err)
	}
	return writeFileAtomic(p.ItemPath, append(b, '\n'))
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

// selfHref is the absolute URL of the Item at itemPath when a base URL
// (the public location of root) is given and the Item lies under root;
// "" otherwise: STAC wants self absolute, and a relative one misleads.
func selfHref(baseURL, itemPath, root string) string {
	if baseURL == "" {
		return ""
	}
	rel := portableHref(itemPath, root, root)
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "../") {
		return ""
	}
	return strings.TrimSuffix(baseURL, "/") + "/" + rel
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
func (declared) Decode(map[string]any) error { return stac.ErrExtensionDoesNotApply }

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
func (f *fieldsExt) Decode(map[string]any) error { return stac.ErrExtensionDoesNotApply }

// FileInfo is a file's multihash checksum and size (file extension).
type FileInfo struct {
	Checksum string
	Size     int64
}

// addFileInfo writes file:checksum and file:size into the Item's assets
// that files has and declares the file extension when any has them.
func addFileInfo(item *stac.Item, files map[string]FileInfo) {
	for key, fi := range files {
		if a, ok := item.Assets[key]; ok {
			a.Extensions = append(a.Extensions, &fieldsExt{uri: FileSchema, fields: map[string]any{"file:checksum": fi.Checksum, "file:size": fi.Size}})
		}
	}
}

// assetFiles are the checksums and sizes of a product's asset files
// (those that exist) by asset key.
func assetFiles(product string, floatRel, probabilities bool) (map[string]FileInfo, error) {
	paths := map[string]string{productAssetKey: product, styleAssetKey: geo.StylePath(product)}
	if floatRel {
		paths[reliabilityAssetKey] = geo.ReliabilityPath(product)
	}
	if probabilities {
		paths[probabilitiesAssetKey] = geo.ProbabilitiesPath(product)
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

// modelItem is the STAC Item of the model a run uses, which its products'
// Items point at (derived_from, processing:expression) by an href that is
// never a local path outside the Items' root (an absolute local path is a
// broken link for every consumer of a published catalog): the Item given
// (Config.ModelItem: a URL, or a path under the root); else the one beside
// the model file when it describes this model (its pnec:model_checksum) and
// lies under the root, or, elsewhere, by its absolute self URL (pnec train
// --stac-base-url, pnec model-item --stac-base-url); else one the run writes
// into its output directory, when the first product is described (a run
// whose scenes all fail leaves none). A model given as a value (library
// use, no file) has none: href "".
type modelItem struct {
	href, name string
	write      *ModelItemParams // the Item still to write at href; nil: none to write
	once       sync.Once
	err        error
}

// itemsRoot is the directory the Items' relative hrefs stay under: the
// Collection's, else the output directory.
func (cfg *Config) itemsRoot() string {
	if cfg.Collection != "" {
		return filepath.Dir(cfg.Collection)
	}
	return cfg.OutDir
}

// underRoot reports whether the local path p lies under the Items' root
// (portableHref then writes it relative).
func (cfg *Config) underRoot(p string) bool {
	root := cfg.itemsRoot()
	h := portableHref(p, root, root)
	return !filepath.IsAbs(h) && !strings.HasPrefix(h, "../")
}

// ErrModelItemOutside: Config.ModelItem is a local file outside the Items'
// root, which every Item would name by an absolute local path.
var ErrModelItemOutside = errors.New("the model's STAC Item lies outside the Items' root")

// checkModelItemHref refuses, before any work, a Config.ModelItem that
// every Item would name by an absolute local path.
func (cfg *Config) checkModelItemHref() error {
	h := cfg.ModelItem
	if h == "" || isRemote(h) || strings.Contains(h, "://") || strings.HasPrefix(h, "/vsi") || cfg.underRoot(h) {
		return nil
	}
	return fmt.Errorf("%s: %w %s: every Item would name it by an absolute local path; give its URL, or a path under %s",
		h, ErrModelItemOutside, cfg.itemsRoot(), cfg.itemsRoot())
}

func newModelItem(cfg *Config, m *model.Model, now time.Time) (*modelItem, error) {
	if cfg.ModelItem != "" {
		return &modelItem{href: cfg.ModelItem, name: ModelName(cfg.ModelPath)}, nil
	}
	if cfg.ModelPath == "" || m == nil {
		return &modelItem{}, nil
	}
	mi := &modelItem{name: ModelName(cfg.ModelPath), href: ModelItemPath(cfg.ModelPath)}
	if b, err := os.ReadFile(mi.href); err == nil {
		var doc struct {
			Properties map[string]any `json:"properties"`
			Links      []struct {
				Rel, Href string
			} `json:"links"`
		}
		if json.Unmarshal(b, &doc) == nil && doc.Properties[propModelChecksum] == m.Checksum() {
			if n, ok := doc.Properties["mlm:name"].(string); ok && CheckModelName(n) == nil {
				mi.name = n // as the Item names it (model-item --model-name)
			}
			if cfg.underRoot(mi.href) {
				return mi, nil
			}
			for _, l := range doc.Links {
				if l.Rel == "self" && (strings.HasPrefix(l.Href, "https://") || strings.HasPrefix(l.Href, "http://")) {
					mi.href = l.Href // where it is published
					return mi, nil
				}
			}
			// Elsewhere on this machine only: a copy goes into the catalog.
		}
	}
	st, err := os.Stat(cfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", cfg.ModelPath, err)
	}
	mi.href = filepath.Join(cfg.OutDir, filepath.Base(ModelItemPath(cfg.ModelPath)))
	mi.write = &ModelItemParams{Model: m, ModelPath: cfg.ModelPath, ItemPath: mi.href, Name: mi.name, Datetime: st.ModTime(), Now: now}
	if base := cfg.STACBaseURL; base != "" {
		// The public URL of the output directory, under the root's.
		if rel := portableHref(cfg.OutDir, cfg.itemsRoot(), cfg.itemsRoot()); rel == "." {
			mi.write.BaseURL = base
		} else if cfg.underRoot(cfg.OutDir) {
			mi.write.BaseURL = strings.TrimSuffix(base, "/") + "/" + rel
		}
	}
	return mi, nil
}

// ensure writes the Item when the run must (once); the error stays.
func (mi *modelItem) ensure() error {
	mi.once.Do(func() {
		if mi.write != nil {
			if err := WriteModelItem(*mi.write); err != nil {
				mi.err = fmt.Errorf("model STAC item %s: %w", mi.href, err)
			}
		}
	})
	return mi.err
}

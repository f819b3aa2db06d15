package pipelines

import (
	"encoding/json"
	"fmt"
	"os"

	stac "github.com/planetlabs/go-stac"
	raster "github.com/planetlabs/go-stac/extensions/raster/v1"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/processor"
)

// The class probabilities asset (processor.Options.Probabilities): its key,
// and the fields that record which probabilities it holds, so that a rerun
// asking for others redoes the scene.
const (
	probabilitiesAssetKey = "probabilities"
	propProbStage         = "pnec:probabilities_stage"
	propProbTopK          = "pnec:top_k"
)

// probabilitiesAsset describes the probabilities file of a product: one
// band per class, or top-k (class, probability) band pairs, percent with
// the product's no-data.
func probabilitiesAsset(p ItemParams, href string) *stac.Asset {
	k := len(p.Classes)
	geoClasses := make([]geo.ClassInfo, k)
	for i, c := range p.Classes {
		geoClasses[i] = geo.ClassInfo{Value: c.Value, Name: c.Name}
	}
	dtype := "uint8"
	if p.NoData == geo.NoDataUInt16 {
		dtype = "uint16"
	}
	names := geo.ProbabilityBandNames(geoClasses, p.TopK)
	bands := make([]*raster.Band, len(names))
	var exts []stac.Extension
	for i := range names {
		b := &raster.Band{NoData: p.NoData, Sampling: "area", DataType: dtype, Unit: geo.ReliabilityUnit}
		if p.TopK > 0 && i%2 == 0 {
			b.Unit = ""
			exts = append(exts, &Classification{Band: i, Classes: p.Classes})
		}
		bands[i] = b
	}
	exts = append([]stac.Extension{&raster.Asset{Bands: bands}}, exts...)
	exts = append(exts, &rasterStddev{})
	stage := "after the AvgPool recovery (the class band is their argmax)"
	if p.Probabilities == processor.ProbabilitiesNetwork {
		stage = "of the network, blended across tiles, before the AvgPool recovery"
	}
	desc := fmt.Sprintf("Class probabilities %s in percent (0-100, rounded): one band per class in ascending class value order, named after the class. %d = no data.", stage, p.NoData)
	if p.TopK > 0 {
		desc = fmt.Sprintf("The %d most probable classes of each pixel, %s: bands class_1, probability_1, class_2, ... hold a class value and its probability in percent (0-100, rounded). %d = no data.",
			p.TopK, stage, p.NoData)
	}
	return &stac.Asset{
		Href:        href,
		Type:        cogMediaType,
		Title:       "class probabilities",
		Description: desc,
		Roles:       []string{"data", "probability"},
		Extensions:  append(exts, &probabilitiesRecord{stage: string(p.Probabilities), topK: p.TopK}),
	}
}

// probabilitiesRecord writes which probabilities the asset holds
// (propProbStage, propProbTopK) into it.
type probabilitiesRecord struct {
	stage string
	topK  int
}

// URI: the fields are pnec's own, without a schema; the raster extension's
// URI (declared anyway) keeps stac_extensions free of an unpublished one.
func (*probabilitiesRecord) URI() string { return RasterSchema }
func (r *probabilitiesRecord) Encode(asset map[string]any) error {
	asset[propProbStage] = r.stage
	asset[propProbTopK] = r.topK
	return nil
}
func (r *probabilitiesRecord) Decode(map[string]any) error { return stac.ErrExtensionDoesNotApply }

// probabilitiesUpToDate reports whether the Item at itemPath records the
// probabilities asked for (stage, topK; none when stage is off) and their
// file is there. Without probabilities asked for, an Item that lists some
// is up to date: the file stays as it was.
func probabilitiesUpToDate(itemPath, productPath string, stage processor.ProbabilityStage, topK int) (bool, string) {
	if stage == processor.ProbabilitiesOff {
		return true, ""
	}
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return false, "no STAC item"
	}
	var doc struct {
		Assets map[string]map[string]json.RawMessage `json:"assets"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return false, "unreadable STAC item"
	}
	a, ok := doc.Assets[probabilitiesAssetKey]
	if !ok {
		return false, "no probabilities"
	}
	var gotStage string
	var gotK int
	if json.Unmarshal(a[propProbStage], &gotStage) != nil || json.Unmarshal(a[propProbTopK], &gotK) != nil ||
		gotStage != string(stage) || gotK != topK {
		return false, "other probabilities asked for"
	}
	if _, err := os.Stat(geo.ProbabilitiesPath(productPath)); err != nil {
		return false, "no probabilities file"
	}
	return true, ""
}

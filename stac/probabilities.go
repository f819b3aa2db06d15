package stac

import (
	"fmt"

	gostac "github.com/planetlabs/go-stac"
	raster "github.com/planetlabs/go-stac/extensions/raster/v1"

	"github.com/pnec/pnec/geo"
)

// Probabilities describe the class probabilities file beside a product
// (processor.Options.Probabilities, TopK).
type Probabilities struct {
	// Stage is the stage the probabilities are of as processor names it
	// (processor.ProbabilityStage), recorded as pnec:probabilities_stage;
	// "" when there is no probabilities file.
	Stage string
	// OfNetwork: they are the network's, blended across tiles, before the
	// AvgPool recovery (processor.ProbabilitiesNetwork); else after it.
	OfNetwork bool
	// TopK is the number of (class, probability) band pairs; 0: one band
	// per class.
	TopK int
}

// The class probabilities asset (processor.Options.Probabilities): its key,
// and the fields that record which probabilities it holds, so that a rerun
// asking for others redoes the scene.
const (
	ProbabilitiesAssetKey  = "probabilities"
	PropProbabilitiesStage = "pnec:probabilities_stage"
	PropTopK               = "pnec:top_k"
)

// probabilitiesAsset describes the probabilities file of a product: one
// band per class, or top-k (class, probability) band pairs, percent with
// the product's no-data.
func probabilitiesAsset(p ItemParams, href string) *gostac.Asset {
	k := len(p.Classes)
	geoClasses := make([]geo.ClassInfo, k)
	for i, c := range p.Classes {
		geoClasses[i] = geo.ClassInfo{Value: c.Value, Name: c.Name}
	}
	dtype := "uint8"
	if p.NoData == geo.NoDataUInt16 {
		dtype = "uint16"
	}
	names := geo.ProbabilityBandNames(geoClasses, p.Probabilities.TopK)
	bands := make([]*raster.Band, len(names))
	var exts []gostac.Extension
	for i := range names {
		b := &raster.Band{NoData: p.NoData, Sampling: "area", DataType: dtype, Unit: geo.ReliabilityUnit}
		if p.Probabilities.TopK > 0 && i%2 == 0 {
			b.Unit = ""
			exts = append(exts, &Classification{Band: i, Classes: p.Classes})
		}
		bands[i] = b
	}
	exts = append([]gostac.Extension{&raster.Asset{Bands: bands}}, exts...)
	exts = append(exts, &rasterStddev{})
	stage := "after the AvgPool recovery (the class band is their argmax)"
	if p.Probabilities.OfNetwork {
		stage = "of the network, blended across tiles, before the AvgPool recovery"
	}
	desc := fmt.Sprintf("Class probabilities %s in percent (0-100, rounded): one band per class in ascending class value order, named after the class. %d = no data.", stage, p.NoData)
	if p.Probabilities.TopK > 0 {
		desc = fmt.Sprintf("The %d most probable classes of each pixel, %s: bands class_1, probability_1, class_2, ... hold a class value and its probability in percent (0-100, rounded). %d = no data.",
			p.Probabilities.TopK, stage, p.NoData)
	}
	return &gostac.Asset{
		Href:        href,
		Type:        cogMediaType,
		Title:       "class probabilities",
		Description: desc,
		Roles:       []string{"data", "probability"},
		Extensions:  append(exts, &probabilitiesRecord{stage: p.Probabilities.Stage, topK: p.Probabilities.TopK}),
	}
}

// probabilitiesRecord writes which probabilities the asset holds
// (PropProbabilitiesStage, PropTopK) into it.
type probabilitiesRecord struct {
	stage string
	topK  int
}

// URI: the fields are pnec's own, without a schema; the raster extension's
// URI (declared anyway) keeps stac_extensions free of an unpublished one.
func (*probabilitiesRecord) URI() string { return RasterSchema }
func (r *probabilitiesRecord) Encode(asset map[string]any) error {
	asset[PropProbabilitiesStage] = r.stage
	asset[PropTopK] = r.topK
	return nil
}
func (r *probabilitiesRecord) Decode(map[string]any) error { return gostac.ErrExtensionDoesNotApply }

package pipelines

import (
	"encoding/json"
	"os"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

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
	a, ok := doc.Assets[stac.ProbabilitiesAssetKey]
	if !ok {
		return false, "no probabilities"
	}
	var gotStage string
	var gotK int
	if json.Unmarshal(a[stac.PropProbabilitiesStage], &gotStage) != nil || json.Unmarshal(a[stac.PropTopK], &gotK) != nil ||
		gotStage != string(stage) || gotK != topK {
		return false, "other probabilities asked for"
	}
	if _, err := os.Stat(geo.ProbabilitiesPath(productPath)); err != nil {
		return false, "no probabilities file"
	}
	return true, ""
}

package pipelines

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pnec/pnec/stac"
)

// ErrNoMask: a scene's mask cannot be found (its STAC Item has no asset
// of the mask role, or the input is no STAC Item).
var ErrNoMask = errors.New("no mask for the scene")

// Mask specifications (Config.Mask): a mask for every scene, a pattern
// with {key} for one per scene, or asset:ROLE for a STAC Item's asset.
const (
	maskKeyPlaceholder = "{key}"
	maskAssetPrefix    = "asset:"
)

// MaskRole is the asset role a mask specification asks for ("" when it
// is no asset:ROLE specification): Expand takes it (ExpandOptions.MaskRole).
func MaskRole(spec string) string {
	role, _ := strings.CutPrefix(spec, maskAssetPrefix)
	if role == spec {
		return ""
	}
	return role
}

// sceneMask is the mask of scene in under the specification spec: ""
// (none), the STAC Item's mask asset for asset:ROLE, spec with {key}
// replaced by the scene's key, or spec itself.
func sceneMask(spec string, in Input) (string, error) {
	switch {
	case spec == "":
		return "", nil
	case MaskRole(spec) != "":
		if in.Mask == "" {
			if in.Item == "" {
				return "", fmt.Errorf("%w: %s is no STAC Item's asset, so it has no asset with role %q", ErrNoMask, in.Name, MaskRole(spec))
			}
			return "", fmt.Errorf("%w: its STAC Item %s has no asset with role %q", ErrNoMask, in.Item, MaskRole(spec))
		}
		return in.Mask, nil
	case strings.Contains(spec, maskKeyPlaceholder):
		return strings.ReplaceAll(spec, maskKeyPlaceholder, in.Key), nil
	}
	return spec, nil
}

// maskAsset is the key of the one asset of an Item with role role, ""
// when it has none (the scene reports it: sceneMask).
func maskAsset(assets map[string]stacAsset, role string) (string, error) {
	var keys []string
	for k, a := range assets {
		for _, r := range a.Roles {
			if r == role {
				keys = append(keys, k)
				break
			}
		}
	}
	sort.Strings(keys)
	switch len(keys) {
	case 0:
		return "", nil
	case 1:
		return keys[0], nil
	}
	return "", fmt.Errorf("%w: several assets have role %q (%s)", ErrNoMask, role, strings.Join(keys, ", "))
}

// maskRecord adds the mask a product was made within to its source
// record (name, and size and modification time of a local file), so that
// a rerun with another mask, or a changed one, redoes the scene.
func maskRecord(r *stac.SourceRecord, mask string) {
	if mask == "" {
		return
	}
	r.Mask = mask
	if st, err := os.Stat(mask); err == nil && st.Mode().IsRegular() {
		r.MaskSizeBytes = st.Size()
		r.MaskModTime = st.ModTime().UTC().Format(time.RFC3339Nano)
	}
}

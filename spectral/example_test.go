package spectral_test

import (
	"errors"
	"fmt"

	"github.com/pnec/pnec/spectral"
)

// A model trained on 10 nm bands meets a scene whose bands lie 5 nm
// further: refused as it is, made from the scene's bands when resampling
// is asked for.
func ExampleMatch() {
	model := spectral.BandSet{Bands: 3, CentresNM: []float64{500, 510, 520}, FWHMNM: []float64{10, 10, 10}}
	var scene spectral.BandSet
	for c := 485.0; c <= 535; c += 5 {
		scene.CentresNM = append(scene.CentresNM, c+2.5)
		scene.FWHMNM = append(scene.FWHMNM, 5)
	}
	scene.Bands = len(scene.CentresNM)

	_, err := spectral.Match(model, scene, spectral.Options{})
	fmt.Println(errors.Is(err, spectral.ErrBandsDiffer))
	fmt.Println(err)

	plan, err := spectral.Match(model, scene, spectral.Options{Resample: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("model bands from scene bands %v\n", plan.Read)
	// Output:
	// true
	// bands differ from the model's: scene 11 bands, 487.5-537.5 nm, FWHM 5 nm, model 3 bands, 500-520 nm, FWHM 10 nm; largest centre difference 2.50 nm (model band 1 at 500 nm, nearest scene band 497.5 nm); model band 1 (500 nm) is 10 nm wide, the scene's 5 nm
	// model bands from scene bands [0 1 2 3 4 5 6 7 8 9 10]
}

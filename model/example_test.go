package model_test

import (
	"context"
	"fmt"
	"log"

	"github.com/pnec/pnec/model"
)

// A model is trained on a labelled scene (pixel-interleaved samples, a
// class value per pixel, 0 for unlabelled) and predicts class
// probabilities and the calibrated uncertainty for any scene of the same
// bands. Here a 24 x 24 scene of two spectra, left and right, is learnt in
// a few epochs on the pure-Go backend.
func ExampleTrain() {
	const rows, cols, bands = 24, 24, 6
	s := model.Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands)}
	labels := make([]int32, rows*cols)
	for r := range rows {
		for c := range cols {
			class := int32(1 + c*2/cols) // 1 on the left half, 2 on the right
			labels[r*cols+c] = class
			for b := range bands {
				v := float32(100 + 40*b)
				if class == 2 {
					v = float32(400 - 50*b)
				}
				s.Data[(r*cols+c)*bands+b] = v + float32((r*7+c*3+b)%5)
			}
		}
	}
	cfg := model.DefaultConfig()
	cfg.Epochs = 20
	m, err := model.Train(context.Background(), s, labels, model.TrainOptions{Config: cfg, Backend: "go"})
	if err != nil {
		log.Fatal(err)
	}
	p, err := model.NewPredictor(m, "go")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	pred, err := p.Predict(context.Background(), s)
	if err != nil {
		log.Fatal(err)
	}
	right := 0 // pixels whose most probable class is their label
	for i := range rows * cols {
		best := 0
		for k := 1; k < pred.Classes; k++ {
			if pred.Prob[i*pred.Classes+k] > pred.Prob[i*pred.Classes+best] {
				best = k
			}
		}
		if m.Classes()[best].Value == int(labels[i]) {
			right++
		}
	}
	fmt.Printf("%d classes, %d x %d probabilities, %d uncertainties\n", pred.Classes, pred.Rows, pred.Cols, len(pred.Uncertainty))
	fmt.Println("at least 95% of the pixels right:", right*100 >= 95*rows*cols)
	// Output:
	// 2 classes, 24 x 24 probabilities, 576 uncertainties
	// at least 95% of the pixels right: true
}

package main

import (
	"fmt"

	"github.com/pnec/pnec/model"
)

// setEncoder selects the network's encoder in cfg.
func setEncoder(cfg *model.Config, name string) error {
	switch name {
	case model.EncoderPaper, model.EncoderCell:
		cfg.Encoder = name
		return nil
	}
	return fmt.Errorf("-encoder %s: want paper or cell", name)
}

package main

import (
	"fmt"

	"github.com/pnec/pnec/model"
)

// setEncoder selects the network's encoder in cfg.
func setEncoder(cfg *model.Config, name string) error {
	switch name {
	case "cell":
		return nil
	default:
		return fmt.Errorf("-encoder %s: this build has only the cell encoder", name)
	}
}

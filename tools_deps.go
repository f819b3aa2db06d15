//go:build tools

package tools

import (
	_ "github.com/airbusgeo/godal"
	_ "github.com/gomlx/compute/gobackend"
	_ "github.com/gomlx/go-xla/compute/xla"
	_ "github.com/gomlx/gomlx/core/graph"
	_ "github.com/paulmach/orb"
	_ "github.com/planetlabs/go-stac"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/stretchr/testify/require"
	_ "github.com/urfave/cli/v2"
)

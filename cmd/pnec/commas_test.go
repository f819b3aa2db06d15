package main

import (
	"context"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestRepeatableFlagsKeepCommas: a repeatable flag's
// value reaches the command whole: the documented --quality-mask
// PATH:1,2 (it failed with "open 2"), --config KEY=a,b (refused) and
// --co A=1,B=2 (split silently into two options).
func TestRepeatableFlagsKeepCommas(t *testing.T) {
	app := newApp()
	var got map[string][]string
	for _, c := range app.Commands {
		if c.Name == "classify" {
			c.Before = nil
			c.Action = func(c *cli.Context) error {
				got = map[string][]string{"quality-mask": c.StringSlice("quality-mask"), "co": c.StringSlice("co"),
					"config": c.StringSlice("config")}
				return nil
			}
		}
	}
	err := app.RunContext(context.Background(), []string{"pnec", "--config", "PNEC_TEST_COMMAS=a,b", "classify", "--model", "m.pnec", "--scene", "s.tif", "--out", "o.tif",
		"--quality-mask", "m.tif:1,2", "--quality-mask", "product", "--co", "A=1,B=2"})
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string][]string{
		"quality-mask": {"m.tif:1,2", "product"}, "co": {"A=1,B=2"}, "config": {"PNEC_TEST_COMMAS=a,b"},
	} {
		if !slices.Equal(got[flag], want) {
			t.Errorf("--%s: got %q, want %q", flag, got[flag], want)
		}
	}
	if m, err := parseQualityMask(got["quality-mask"][0]); err != nil || m.Path != "m.tif" || !slices.Equal(m.Bands, []int{0, 1}) {
		t.Errorf("--quality-mask m.tif:1,2 read as %+v, %v: want m.tif, bands 0 and 1", m, err)
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
)

// TestConfigAppliesToEveryCommand checks that the global --config reaches
// GDAL for every command through App.Before alone (the commands do not apply
// it again): each run sets its own option, then fails on its missing
// arguments, after Before has run.
func TestConfigAppliesToEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"batch"}, {"classify"}, {"evaluate"}, {"experiment"}, {"info"},
		{"import", "mat"}, {"synth"}, {"tiles"}, {"train"},
	} {
		key := "PNEC_TEST_CONFIG_" + strings.ToUpper(strings.Join(args, "_"))
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Cleanup(func() { _ = geo.SetConfig([]string{key + "="}) })
			err := run(context.Background(), append([]string{"pnec", "--config", key + "=on"}, args...))
			if err == nil {
				t.Fatalf("pnec %s without arguments succeeded", strings.Join(args, " "))
			}
			if got := geo.ConfigValue(key); got != "on" {
				t.Errorf("after pnec --config %s=on %s: GDAL sees %s=%q, want on", key, strings.Join(args, " "), key, got)
			}
		})
	}
	err := run(context.Background(), []string{"pnec", "--config", "NOEQUALS", "tiles", "--scene", "x.tif"})
	if err == nil || !strings.Contains(err.Error(), "--config") || !strings.Contains(err.Error(), "NOEQUALS") {
		t.Errorf("bad --config: got %v, want an error naming --config and the entry", err)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/stac"
)

// payloadOnlyFlags are batch flags a payload's parameters cannot set:
// where the payload itself comes from and goes, and the run report.
var payloadOnlyFlags = map[string]bool{"payload": true, "payload-out": true, "task-name": true, "report": true, "quiet": true, "q": true, "help": true, "h": true}

// readPayloadFlag reads --payload (nil without it) and applies its task
// parameters to the flags the command line did not set: a parameter
// max_memory sets --max-memory, co a list sets --co for each value. A
// parameter no flag takes is an error, so that a typo is not ignored.
func readPayloadFlag(c *cli.Context) (*stac.Payload, error) {
	name := c.String("payload")
	if name == "" {
		return nil, nil
	}
	var r io.Reader = os.Stdin
	base := ""
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--payload: %w", err)
		}
		defer f.Close()
		r, base = f, name
	}
	p, err := stac.ReadPayload(r, base)
	if err != nil {
		return nil, fmt.Errorf("--payload %s: %w", name, err)
	}
	task := c.String("task-name")
	params, err := p.Parameters(task)
	if err != nil {
		return nil, fmt.Errorf("--payload %s: %w", name, err)
	}
	flags := map[string]bool{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			flags[n] = true
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		flag := strings.ReplaceAll(k, "_", "-")
		if !flags[flag] || payloadOnlyFlags[flag] {
			return nil, fmt.Errorf("--payload %s: tasks.%s: unknown parameter %q (the parameters are batch's flags, e.g. out_dir, max_memory)", name, task, k)
		}
		if c.IsSet(flag) {
			continue // the command line wins
		}
		values, err := paramValues(params[k])
		if err != nil {
			return nil, fmt.Errorf("--payload %s: tasks.%s.%s: %w", name, task, k, err)
		}
		for _, v := range values {
			if err := c.Set(flag, v); err != nil {
				return nil, fmt.Errorf("--payload %s: tasks.%s.%s %q: %w", name, task, k, v, err)
			}
		}
	}
	return p, nil
}

// paramValues writes a parameter as flag values: a string, number or
// boolean is one, a list one per element.
func paramValues(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case bool:
		return []string{strconv.FormatBool(x)}, nil
	case float64:
		return []string{strconv.FormatFloat(x, 'f', -1, 64)}, nil
	case []any:
		var out []string
		for _, e := range x {
			s, err := paramValues(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %T: want a string, number, boolean or a list of them", v)
}

// writePayloadOut writes the output payload to --payload-out (nothing
// without it): a file atomically, or standard output.
func writePayloadOut(c *cli.Context, out map[string]any) error {
	name := c.String("payload-out")
	if name == "" || out == nil {
		return nil
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("--payload-out: %w", err)
	}
	b = append(b, '\n')
	if name == "-" {
		w := c.App.Writer
		if w == nil {
			w = os.Stdout
		}
		_, err := w.Write(b)
		return err
	}
	if err := tempfiles.WriteFile(name, b, 0o644); err != nil {
		return fmt.Errorf("--payload-out: %w", err)
	}
	return nil
}

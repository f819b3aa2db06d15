package pipelines

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/stac"
)

//go:embed htmlreport.tmpl
var htmlReportTemplate string

var htmlReportTmpl = template.Must(template.New("report").Parse(htmlReportTemplate))

// StatusPublished is a row of the HTML report for an Item of the output
// folder's catalog that this run did not touch (an earlier run's, or
// another shard's).
const StatusPublished = "published"

// HTMLReport is what the batch's HTML page shows: the run's summary and
// scene reports, and the Items of the output folder's root document.
type HTMLReport struct {
	Summary Summary
	Scenes  []SceneReport
	// Root is the Catalog or Collection whose Items are listed besides
	// the run's scenes ("" = only the run's).
	Root string
	// OutDir is the output folder (named on the page).
	OutDir string
	Now    time.Time
}

// htmlRow is one scene of the page.
type htmlRow struct {
	Key, Input, Status, Reason      string
	Drift, DriftDetail              string
	Shares                          []htmlShare
	Reliability, Datetime, Seconds  string
	Thumb, Product, Item, Footprint string
	geometry                        [][][2]float64 // lon/lat rings
}

// htmlShare is a class's share of a product's valid pixels.
type htmlShare struct {
	Name, Color string
	Percent     float64
}

// htmlPage is the template's data.
type htmlPage struct {
	Title, Generated, OutDir string
	Summary                  [][2]string
	Rows                     []htmlRow
	Map                      template.HTML
	Counts                   map[string]int
}

// WriteHTMLReport writes the batch's page to path atomically: one
// self-contained HTML file (no script, no network: the thumbnails and
// products are relative links into the output folder) with the run's
// summary, a table of scenes (status, reason, drift, class shares, mean
// reliability, links, thumbnail) and the footprints drawn as an inline SVG
// map. It is made anew from the run's scenes and the root document's
// Items, so a rerun after a kill shows the whole folder.
func WriteHTMLReport(path string, rep HTMLReport) error {
	pageDir := filepath.Dir(path)
	rows := htmlRows(rep, pageDir)
	page := htmlPage{
		Title:     "pnec batch report",
		Generated: rep.Now.UTC().Format(time.RFC3339),
		OutDir:    rep.OutDir,
		Summary:   summaryPairs(rep.Summary),
		Rows:      rows,
		Map:       template.HTML(footprintSVG(rows)), // built from numbers and escaped names only
		Counts:    map[string]int{},
	}
	for _, r := range rows {
		page.Counts[r.Status]++
	}
	var b bytes.Buffer
	if err := htmlReportTmpl.Execute(&b, page); err != nil {
		return fmt.Errorf("HTML report %s: %w", path, err)
	}
	if err := tempfiles.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("HTML report %s: %w", path, err)
	}
	return nil
}

// summaryPairs are the summary's lines: label, value.
func summaryPairs(s Summary) [][2]string {
	secs := s.Elapsed.Seconds()
	rate := "-"
	if secs > 0 && s.Pixels > 0 {
		rate = fmt.Sprintf("%.0f", float64(s.Pixels)/secs)
	}
	backend := s.Backend
	if backend == "" {
		backend = "default"
	}
	return [][2]string{
		{"scenes", strconv.Itoa(s.Scenes)},
		{"done", strconv.Itoa(s.Done)},
		{"skipped (up to date)", strconv.Itoa(s.Skipped)},
		{"failed", strconv.Itoa(s.Failed)},
		{"withheld for drift", strconv.Itoa(s.Refused + s.DriftRefused)},
		{"busy (another process)", strconv.Itoa(s.Busy)},
		{"stopped", strconv.Itoa(s.Stopped)},
		{"drift warn / fail", fmt.Sprintf("%d / %d", s.DriftWarn, s.DriftFail)},
		{"wall time", s.Elapsed.Round(time.Millisecond).String()},
		{"pixels classified", strconv.FormatInt(s.Pixels, 10)},
		{"pixels per second", rate},
		{"jobs, backend", fmt.Sprintf("%d, %s", s.Jobs, backend)},
	}
}

// htmlRows are the page's rows: the run's scenes (with their Items' figures
// when they have one), then the root document's other Items; failures
// first, then by key.
func htmlRows(rep HTMLReport, pageDir string) []htmlRow {
	var rows []htmlRow
	seen, seenKey := map[string]bool{}, map[string]bool{}
	for _, s := range rep.Scenes {
		r := htmlRow{Input: s.Input, Status: s.Status, Reason: s.Reason, Drift: s.Drift, DriftDetail: strings.Join(s.DriftReasons, "; ")}
		r.Key = strings.TrimSuffix(filepath.Base(s.Output), filepath.Ext(s.Output))
		if s.Output == "" {
			r.Key = strings.TrimSuffix(filepath.Base(s.Input), filepath.Ext(s.Input))
		}
		// One row per scene: an Item of an earlier run of a scene this run
		// failed or withheld is not listed again as published.
		seenKey[r.Key] = true
		if s.Times != nil && s.Times.Total > 0 {
			r.Seconds = fmt.Sprintf("%.1f s", s.Times.Total)
		}
		if (s.Status == StatusDone || s.Status == StatusSkipped) && s.Item != "" {
			if abs, err := filepath.Abs(s.Item); err == nil {
				seen[abs] = true
			}
			fillFromItem(&r, s.Item, pageDir)
		}
		rows = append(rows, r)
	}
	if rep.Root != "" {
		dir := filepath.Dir(rep.Root)
		for href := range stac.RootItems(rep.Root) {
			p := filepath.Join(dir, filepath.FromSlash(href))
			abs, err := filepath.Abs(p)
			if err != nil || seen[abs] || stac.HasScheme(href) || seenKey[strings.TrimSuffix(filepath.Base(p), ".json")] {
				continue
			}
			seen[abs] = true
			r := htmlRow{Status: StatusPublished, Key: strings.TrimSuffix(filepath.Base(p), ".json")}
			fillFromItem(&r, p, pageDir)
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if a, b := statusRank(rows[i].Status), statusRank(rows[j].Status); a != b {
			return a < b
		}
		return rows[i].Key < rows[j].Key
	})
	return rows
}

// statusRank orders the rows: what needs a look first.
func statusRank(s string) int {
	switch s {
	case StatusFailed:
		return 0
	case StatusRefused:
		return 1
	case StatusStopped, StatusBusy:
		return 2
	}
	return 3
}

// reportItem is what the page reads of a product's Item.
type reportItem struct {
	ID       string `json:"id"`
	Geometry *struct {
		Type        string          `json:"type"`
		Coordinates json.RawMessage `json:"coordinates"`
	} `json:"geometry"`
	Properties map[string]json.RawMessage `json:"properties"`
	Assets     map[string]struct {
		Href  string `json:"href"`
		Bands []struct {
			Classes    []stac.ClassObject `json:"classification:classes"`
			Statistics *struct {
				Mean *float64 `json:"mean"`
			} `json:"statistics"`
		} `json:"raster:bands"`
	} `json:"assets"`
}

// fillFromItem completes r from the Item at itemPath: drift, class shares,
// mean reliability, time, footprint and links (relative to pageDir). An
// unreadable Item leaves r as it is.
func fillFromItem(r *htmlRow, itemPath, pageDir string) {
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return
	}
	var it reportItem
	if json.Unmarshal(b, &it) != nil {
		return
	}
	if it.ID != "" {
		r.Key = it.ID
	}
	itemDir := filepath.Dir(itemPath)
	link := func(href string) string { return pageHref(href, itemDir, pageDir) }
	r.Item = link(filepath.Base(itemPath))
	var verdict string
	if json.Unmarshal(it.Properties["pnec:drift_verdict"], &verdict) == nil && r.Drift == "" {
		r.Drift = verdict
	}
	if r.DriftDetail == "" {
		r.DriftDetail = driftDetail(it.Properties["pnec:drift"])
	}
	json.Unmarshal(it.Properties["datetime"], &r.Datetime)
	if a, ok := it.Assets[stac.ThumbnailAssetKey]; ok {
		r.Thumb = link(a.Href)
	}
	if a, ok := it.Assets[stac.ProductAssetKey]; ok {
		r.Product = link(a.Href)
		if len(a.Bands) == 2 {
			if st := a.Bands[1].Statistics; st != nil && st.Mean != nil {
				r.Reliability = fmt.Sprintf("%.1f %%", *st.Mean)
			}
			var counts map[string]int64
			json.Unmarshal(it.Properties[stac.PropClassCounts], &counts)
			r.Shares = classShares(counts, a.Bands[0].Classes)
		}
	}
	if it.Geometry != nil {
		r.geometry = polygonRings(it.Geometry.Type, it.Geometry.Coordinates)
	}
}

// pageHref is an Item's href (relative to itemDir) as the page at pageDir
// links it; URLs and absolute paths stay.
func pageHref(href, itemDir, pageDir string) string {
	if href == "" || stac.HasScheme(href) || filepath.IsAbs(href) {
		return href
	}
	target := filepath.Join(itemDir, filepath.FromSlash(href))
	rel, err := filepath.Rel(pageDir, target)
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}

// driftDetail is the drift figures the verdict judges, and its reasons.
func driftDetail(raw json.RawMessage) string {
	var d map[string]any
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	var parts []string
	for _, k := range []string{"feature_far_share", "recalibration_change_share", "far_share"} {
		if v, ok := d[k].(float64); ok {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", strings.ReplaceAll(k, "_", " "), 100*v))
		}
	}
	if rs, ok := d["reasons"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// classShares are the classes' shares of the counted pixels, largest first.
func classShares(counts map[string]int64, classes []stac.ClassObject) []htmlShare {
	var total int64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return nil
	}
	byValue := map[string]stac.ClassObject{}
	for _, c := range classes {
		byValue[strconv.Itoa(c.Value)] = c
	}
	var out []htmlShare
	for v, n := range counts {
		c, ok := byValue[v]
		name, color := "class "+v, "888888"
		if ok {
			name, color = c.Name, c.ColorHint
		}
		out = append(out, htmlShare{Name: name, Color: "#" + color, Percent: math.Round(1000*float64(n)/float64(total)) / 10})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Percent != out[j].Percent {
			return out[i].Percent > out[j].Percent
		}
		return out[i].Name < out[j].Name
	})
	return out
}

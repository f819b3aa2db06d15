package stac

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
)

// A STAC task payload, as the stac-task convention (stac-utils/stac-task)
// and the orchestrators built on it (Cirrus) hand a task: a GeoJSON
// FeatureCollection of input Items with a "process" array whose first
// ProcessDefinition holds the task's parameters (tasks.<name>, over
// workflow_options), upload_options (path_template) and collection
// assignment (collection_matchers, or the older upload_options.collections).
// The task answers with the same payload, its features replaced by the
// Items it made.

// ErrPayload marks a payload that is not one (or asks what pnec cannot do).
var ErrPayload = errors.New("bad STAC task payload")

// DefaultTaskName is the task name pnec reads its parameters under
// (process[0].tasks.pnec).
const DefaultTaskName = "pnec"

// Payload is a STAC task payload. Its other members are kept as they came
// and returned in the output payload.
type Payload struct {
	doc     map[string]any
	process map[string]any // the first ProcessDefinition
	// Features are the input Items as JSON.
	Features []json.RawMessage
	// Base is the file the payload was read from ("" for standard input):
	// relative hrefs of its Items resolve against it.
	Base string
	// protect, when set, refuses a local path OutputItem would copy a
	// file onto (Protect).
	protect func(path string) error
}

// Protect makes OutputItem refuse to copy a file onto a local path for
// which check returns an error (the run's inputs: a path_template that
// resolves onto a scene would replace it with its product), returning
// that error instead.
func (p *Payload) Protect(check func(path string) error) { p.protect = check }

// UploadDir is where the path_template puts the files of the product
// Item id made from source when the source Item alone fills it (${id},
// ${collection}, the date from its datetime or start_datetime, its
// properties): ok is false without a path_template, for a remote one, or
// when a variable needs a product Item's own property.
func (p *Payload) UploadDir(id string, source map[string]any) (dir string, ok bool) {
	coll, err := p.collectionOf(id)
	if err != nil {
		return "", false
	}
	srcProps, _ := source["properties"].(map[string]any)
	props := map[string]any{}
	for _, k := range []string{"datetime", "start_datetime"} {
		if v, ok := srcProps[k]; ok {
			props[k] = v
		}
	}
	item := map[string]any{"id": id, "properties": props}
	if coll != "" {
		item["collection"] = coll
	}
	dest, err := p.uploadDest(coll, item, source)
	if err != nil || dest == "" || !strings.HasPrefix(dest, "/") || strings.HasPrefix(dest, "/vsi") {
		return "", false
	}
	return dest, true
}

// ReadPayload reads a payload from r (base: its file name, "" for stdin).
func ReadPayload(r io.Reader, base string) (*Payload, error) {
	b, err := ReadDocument(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPayload, err)
	}
	p := &Payload{Base: base}
	if err := json.Unmarshal(b, &p.doc); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrPayload, err)
	}
	if p.doc["type"] != "FeatureCollection" {
		return nil, fmt.Errorf("%w: type %v, want FeatureCollection", ErrPayload, p.doc["type"])
	}
	// features must be a list: a payload without one (or with another
	// value) is no task's input, and was run as an empty job (exit 0) or
	// refused with Go's unmarshalling message.
	switch fs, ok := p.doc["features"]; fs.(type) {
	case []any:
	case nil:
		if !ok {
			return nil, fmt.Errorf("%w: no features member (want a list of STAC Items)", ErrPayload)
		}
		return nil, fmt.Errorf("%w: features is null, want a list of STAC Items", ErrPayload)
	default:
		return nil, fmt.Errorf("%w: features is %s, want a list of STAC Items", ErrPayload, jsonKind(fs))
	}
	var f struct {
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: features: %v", ErrPayload, err)
	}
	p.Features = f.Features
	switch pr := p.doc["process"].(type) {
	case []any: // the convention: an array, the first definition is this task's
		if len(pr) == 0 {
			return nil, fmt.Errorf("%w: empty process array", ErrPayload)
		}
		d, ok := pr[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: process[0] is not an object", ErrPayload)
		}
		p.process = d
	case map[string]any: // the older form: one definition
		p.process = pr
	case nil:
		return nil, fmt.Errorf("%w: no process definition", ErrPayload)
	default:
		return nil, fmt.Errorf("%w: process must be an array of definitions", ErrPayload)
	}
	return p, nil
}

// jsonKind names the kind of a decoded JSON value in words.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("a %T", v)
}

// Parameters are the task's parameters: process[0].workflow_options with
// process[0].tasks.<task> over them (tasks as the older list of
// {name, parameters} too).
func (p *Payload) Parameters(task string) (map[string]any, error) {
	out := map[string]any{}
	if wo, ok := p.process["workflow_options"]; ok {
		m, ok := wo.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: workflow_options is not an object", ErrPayload)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	var mine any
	switch ts := p.process["tasks"].(type) {
	case map[string]any:
		mine = ts[task]
	case []any:
		for _, t := range ts {
			if m, ok := t.(map[string]any); ok && m["name"] == task {
				mine = m["parameters"]
			}
		}
	case nil:
	default:
		return nil, fmt.Errorf("%w: tasks must be an object", ErrPayload)
	}
	if mine != nil {
		m, ok := mine.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: tasks.%s is not an object", ErrPayload, task)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// uploadOptions is the part of upload_options pnec uses.
type uploadOptions struct {
	PathTemplate string            `json:"path_template"`
	Collections  map[string]string `json:"collections"` // older: collection -> JSONPath
}

type collectionMatcher struct {
	Type           string `json:"type"`
	Pattern        string `json:"pattern"`
	CollectionName string `json:"collection_name"`
}

func (p *Payload) uploadOptions(collection string) (uploadOptions, error) {
	var u uploadOptions
	raw := p.process["upload_options"]
	if co, ok := p.process["collection_options"].(map[string]any); ok && collection != "" {
		if c, ok := co[collection].(map[string]any); ok && c["upload_options"] != nil {
			raw = c["upload_options"]
		}
	}
	if raw == nil {
		return u, nil
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &u); err != nil {
		return u, fmt.Errorf("%w: upload_options: %v", ErrPayload, err)
	}
	return u, nil
}

// idPattern is the one JSONPath form of collection matching pnec reads:
// an Item's id against a regular expression, as the convention's examples
// write it.
var idPattern = regexp.MustCompile(`^\$\[\?\(@\.id\s*=~\s*'(.*)'\)\]$`)

// collectionOf is the collection the payload's matchers give an Item
// ("" when none matches, or there are none).
func (p *Payload) collectionOf(id string) (string, error) {
	var ms []collectionMatcher
	if raw, ok := p.process["collection_matchers"]; ok {
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &ms); err != nil {
			return "", fmt.Errorf("%w: collection_matchers: %v", ErrPayload, err)
		}
	} else {
		u, err := p.uploadOptions("")
		if err != nil {
			return "", err
		}
		names := make([]string, 0, len(u.Collections))
		for n := range u.Collections {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ms = append(ms, collectionMatcher{Type: "jsonpath", Pattern: u.Collections[n], CollectionName: n})
		}
	}
	for _, m := range ms {
		switch m.Type {
		case "catch_all":
			return m.CollectionName, nil
		case "jsonpath":
			g := idPattern.FindStringSubmatch(strings.TrimSpace(m.Pattern))
			if g == nil {
				return "", fmt.Errorf("%w: collection pattern %q: pnec matches $[?(@.id =~ 'REGEX')] only", ErrPayload, m.Pattern)
			}
			re, err := regexp.Compile(g[1])
			if err != nil {
				return "", fmt.Errorf("%w: collection pattern %q: %v", ErrPayload, m.Pattern, err)
			}
			if re.MatchString(id) {
				return m.CollectionName, nil
			}
		default:
			return "", fmt.Errorf("%w: collection matcher type %q: want jsonpath or catch_all", ErrPayload, m.Type)
		}
	}
	return "", nil
}

var templateVar = regexp.MustCompile(`\$\{([^}]+)\}`)

// expandTemplate fills a path_template from an Item: ${id}, ${collection},
// ${year}, ${month}, ${day}, ${date} (from datetime, else start_datetime)
// and ${PROPERTY} for any of its properties, else of source's (the
// payload's Item it was made from; nil for none).
func expandTemplate(tmpl string, item, source map[string]any) (string, error) {
	props, _ := item["properties"].(map[string]any)
	srcProps, _ := source["properties"].(map[string]any)
	var t time.Time
	for _, k := range []string{"datetime", "start_datetime"} {
		if s, ok := props[k].(string); ok {
			if tt, err := time.Parse(time.RFC3339Nano, s); err == nil {
				t = tt.UTC()
				break
			}
		}
	}
	var missing, unsafe []string
	out := templateVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		k := m[2 : len(m)-1]
		v, ok := templateValue(k, item, props, srcProps, t)
		if !ok {
			missing = append(missing, k)
			return m
		}
		if err := checkTemplateValue(k, v); err != nil {
			unsafe = append(unsafe, err.Error())
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: path_template %q: item %v has no %s", ErrPayload, tmpl, item["id"], strings.Join(missing, ", "))
	}
	if len(unsafe) > 0 {
		return "", fmt.Errorf("%w: path_template %q: item %v: %s", ErrPayload, tmpl, item["id"], strings.Join(unsafe, "; "))
	}
	return out, nil
}

// checkTemplateValue refuses a variable's value that is not one path
// segment: empty, "." or "..", or holding a '/' or '\\' (or a control
// character), any of which would put the files elsewhere than under the
// template's own folders.
func checkTemplateValue(k, v string) error {
	bad := v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\")
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("${%s} is %q, which is not one folder or file name (no '/', '\\', '..', '.', control characters or empty values)", k, v)
	}
	return nil
}

// templateValue is the value of the variable k for item: ok false when
// it has none.
func templateValue(k string, item, props, srcProps map[string]any, t time.Time) (string, bool) {
	switch k {
	case "id", "collection":
		if s, ok := item[k].(string); ok && s != "" {
			return s, true
		}
	case "year", "month", "day", "date":
		if !t.IsZero() {
			return map[string]string{"year": t.Format("2006"), "month": t.Format("01"), "day": t.Format("02"), "date": t.Format("2006-01-02")}[k], true
		}
	default:
		if v, ok := props[k]; ok && v != nil {
			return fmt.Sprint(v), true
		}
		if v, ok := srcProps[k]; ok && v != nil {
			return fmt.Sprint(v), true
		}
	}
	return "", false
}

// productTemplateProps are the properties every product Item has whose
// values a path_template may use (besides the source Item's properties).
var productTemplateProps = map[string]bool{"created": true, PropModelChecksum: true, propBackend: true, PropProductFormat: true,
	propDatetimeSource: true, "datetime": true}

// resolveTemplate checks where a path_template puts the files and makes a
// local one absolute (against the working directory, as a relative
// --out-dir is), so that the output payload's hrefs are absolute as the
// convention wants: a local directory, or an object store (s3://, gs://,
// az://, abfs://, or GDAL's /vsis3/, /vsigs/, /vsiaz/, /vsiadls/, /vsioss/,
// /vsiswift/). /vsimem/ (GDAL's memory: gone when pnec exits), other GDAL
// virtual paths and other URLs are refused.
func resolveTemplate(tmpl string) (string, error) {
	bad := func(why string) error { return fmt.Errorf("%w: path_template %q: %s", ErrPayload, tmpl, why) }
	switch {
	case strings.HasPrefix(tmpl, "/vsimem/"):
		return "", bad("/vsimem/ is GDAL's memory, gone when pnec exits: give a directory or an object store (s3://, gs://, az://)")
	case strings.HasPrefix(tmpl, "/vsi"):
		for _, p := range []string{"/vsis3/", "/vsigs/", "/vsiaz/", "/vsiadls/", "/vsioss/", "/vsiswift/"} {
			if strings.HasPrefix(tmpl, p) {
				return tmpl, nil
			}
		}
		return "", bad("not a GDAL object store pnec uploads to (/vsis3/, /vsigs/, /vsiaz/, /vsiadls/, /vsioss/, /vsiswift/)")
	case HasScheme(tmpl):
		u, _ := url.Parse(tmpl)
		switch u.Scheme {
		case "s3", "gs", "az", "abfs":
			return tmpl, nil
		}
		return "", bad(fmt.Sprintf("%s:// is not a place pnec uploads to: give a directory or s3://, gs://, az://, abfs://", u.Scheme))
	case tmpl == "":
		return "", bad("empty")
	}
	abs, err := filepath.Abs(tmpl)
	if err != nil {
		return "", bad(err.Error())
	}
	if strings.HasSuffix(tmpl, "/") {
		abs += "/"
	}
	return abs, nil
}

// CheckTemplate resolves, before any work, the path_template the product
// Item with id (made from the payload's Item source, whose id is sourceID)
// will be uploaded by, as OutputItem will fill it: where it points
// (resolveTemplate) and each variable (${collection} needs a collection from
// the matchers, or runCollection: the run adds its Items to a Collection;
// ${PROPERTY} a property of the source Item or one every product Item has).
func (p *Payload) CheckTemplate(id, sourceID string, source map[string]any, runCollection bool) error {
	coll, err := p.collectionOf(id)
	if err != nil {
		return err
	}
	u, err := p.uploadOptions(coll)
	if err != nil || u.PathTemplate == "" {
		return err
	}
	if _, err := resolveTemplate(u.PathTemplate); err != nil {
		return err
	}
	srcProps, _ := source["properties"].(map[string]any)
	for _, m := range templateVar.FindAllStringSubmatch(u.PathTemplate, -1) {
		switch k := m[1]; k {
		case "id", "year", "month", "day", "date":
			// Every product Item has an id and a datetime (or
			// start_datetime): a scene without one fails before work.
		case "collection":
			if coll == "" && !runCollection {
				return fmt.Errorf("%w: path_template %q: ${collection}: Item %s gets no collection (no collection matcher names one, and the run adds Items to no STAC Collection)",
					ErrPayload, u.PathTemplate, sourceID)
			}
		default:
			if !productTemplateProps[k] && srcProps[k] == nil {
				return fmt.Errorf("%w: path_template %q: ${%s}: Item %s has no property %q, nor has a product Item (the variables are ${id}, ${collection}, ${year}, ${month}, ${day}, ${date} and the Items' properties)",
					ErrPayload, u.PathTemplate, k, sourceID, k)
			}
			if v := srcProps[k]; v != nil && !productTemplateProps[k] {
				if err := checkTemplateValue(k, fmt.Sprint(v)); err != nil {
					return fmt.Errorf("%w: path_template %q: Item %s: %v", ErrPayload, u.PathTemplate, sourceID, err)
				}
			}
		}
	}
	return nil
}

// Output is the output payload: the input one (its other members as they
// came) with features as its features.
func (p *Payload) Output(features []any) map[string]any {
	out := make(map[string]any, len(p.doc))
	for k, v := range p.doc {
		out[k] = v
	}
	out["features"] = features
	return out
}

// OutputItem is the product Item at itemPath as the output payload gives
// it: collection assigned by the payload's matchers, hrefs absolute, and
// with a path_template the files uploaded there.
func (p *Payload) OutputItem(itemPath string, source map[string]any) (map[string]any, error) {
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return nil, err
	}
	var item map[string]any
	if err := json.Unmarshal(b, &item); err != nil {
		return nil, err
	}
	id, _ := item["id"].(string)
	coll, err := p.collectionOf(id)
	if err != nil {
		return nil, err
	}
	if coll != "" {
		item["collection"] = coll
	}
	dest, err := p.uploadDest(coll, item, source)
	if err != nil {
		return nil, err
	}
	if dest != "" {
		if err := checkProtected(p.protect, dest+"/"+filepath.Base(itemPath)); err != nil {
			return nil, err
		}
	}
	abs := absoluteFrom(filepath.Dir(itemPath))
	if err := outputAssets(item, abs, dest, p.protect); err != nil {
		return nil, err
	}
	links := standaloneLinks(item, abs)
	if dest != "" {
		if err := uploadLinkedDocs(links, dest, p.protect); err != nil {
			return nil, err
		}
		self := dest + "/" + filepath.Base(itemPath)
		links = append(links, map[string]any{"rel": "self", "href": self, "type": geojsonMediaType})
		item["links"] = links
		ib, err := json.MarshalIndent(item, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := uploadBytes(append(ib, '\n'), self); err != nil {
			return nil, err
		}
	}
	item["links"] = links
	return item, nil
}

// uploadDest is where the path_template of collection coll puts the
// files of item (made from source), without a trailing '/'; "" when
// there is no path_template.
func (p *Payload) uploadDest(coll string, item, source map[string]any) (string, error) {
	u, err := p.uploadOptions(coll)
	if err != nil || u.PathTemplate == "" {
		return "", err
	}
	tmpl, err := resolveTemplate(u.PathTemplate)
	if err != nil {
		return "", err
	}
	dest, err := expandTemplate(tmpl, item, source)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(dest, "/"), nil
}

// maxLinkedDoc bounds a linked STAC document uploadLinkedDocs copies.
const maxLinkedDoc = 16 << 20

// uploadLinkedDocs copies, beside an Item uploaded to dest, the local
// STAC documents its links name (the model's Item of derived_from, which
// the run wrote into its output directory), and points the links at the
// copies: a link to the worker's local out/m.pnec.json was published with
// the Item, naming a file nobody else can read. The
// copy's own relative hrefs are made absolute first, so that they lead
// where they did. Links to URLs, and local files that are not JSON
// documents (a scene), stay as they are.
func uploadLinkedDocs(links []any, dest string, protect func(string) error) error {
	for _, l := range links {
		lm, ok := l.(map[string]any)
		if !ok {
			continue
		}
		href, _ := lm["href"].(string)
		if !strings.HasPrefix(href, "/") || strings.HasPrefix(href, "/vsi") || !strings.EqualFold(filepath.Ext(href), ".json") {
			continue
		}
		fi, err := os.Stat(href)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxLinkedDoc {
			continue
		}
		b, err := os.ReadFile(href)
		if err != nil {
			return err
		}
		var doc map[string]any
		if json.Unmarshal(b, &doc) != nil {
			continue
		}
		docAbs := absoluteFrom(filepath.Dir(href))
		for _, a := range []any{doc["links"], doc["assets"]} {
			absolutise(a, docAbs)
		}
		out, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		to := dest + "/" + filepath.Base(href)
		if err := checkProtected(protect, to); err != nil {
			return err
		}
		if err := uploadBytes(append(out, '\n'), to); err != nil {
			return err
		}
		lm["href"] = to
	}
	return nil
}

// absolutise makes the href of each link of a list, or asset of a map,
// absolute through abs.
func absolutise(v any, abs func(string) string) {
	var objs []any
	switch x := v.(type) {
	case []any:
		objs = x
	case map[string]any:
		for _, o := range x {
			objs = append(objs, o)
		}
	}
	for _, o := range objs {
		if m, ok := o.(map[string]any); ok {
			if h, ok := m["href"].(string); ok {
				m["href"] = abs(h)
			}
		}
	}
}

// absoluteFrom makes a relative href of a document in dir an absolute
// path; URLs and absolute paths stay as they are.
func absoluteFrom(dir string) func(string) string {
	return func(href string) string {
		if href == "" || IsURL(href) || strings.Contains(href, "://") || strings.HasPrefix(href, "/") {
			return href
		}
		a, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(href)))
		if err != nil {
			return href
		}
		return a
	}
}

// checkProtected is protect's verdict on the local path to (nil for
// remote ones, or without protect).
func checkProtected(protect func(string) error, to string) error {
	if protect == nil || !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "/vsi") {
		return nil
	}
	return protect(to)
}

// outputAssets names the item's assets absolutely, uploading each local
// file to dest first when dest is not "" (refusing a path protect
// refuses, before copying any).
func outputAssets(item map[string]any, abs func(string) string, dest string, protect func(string) error) error {
	assets, _ := item["assets"].(map[string]any)
	for _, a := range assets {
		if am, ok := a.(map[string]any); ok && dest != "" {
			href, _ := am["href"].(string)
			if err := checkProtected(protect, dest+"/"+filepath.Base(abs(href))); err != nil {
				return err
			}
		}
	}
	for _, a := range assets {
		am, ok := a.(map[string]any)
		if !ok {
			continue
		}
		href, _ := am["href"].(string)
		local := abs(href)
		if dest != "" && strings.HasPrefix(local, "/") && !strings.HasPrefix(local, "/vsi") {
			to := dest + "/" + filepath.Base(local)
			if err := uploadFile(local, to); err != nil {
				return err
			}
			am["href"] = to
		} else {
			am["href"] = local
		}
	}
	return nil
}

// standaloneLinks are the item's links as a payload's Item has them: it
// stands alone, so no relative links, and no links to a local Collection
// that is not in the payload.
func standaloneLinks(item map[string]any, abs func(string) string) []any {
	var links []any
	ls, _ := item["links"].([]any)
	for _, l := range ls {
		lm, ok := l.(map[string]any)
		if !ok {
			continue
		}
		switch lm["rel"] {
		case "self", "root", "parent", "collection":
			continue
		}
		if h, ok := lm["href"].(string); ok {
			lm["href"] = abs(h)
		}
		links = append(links, lm)
	}
	return links
}

// uploadFile copies a local file to to: a local path (atomically), or an
// object store or GDAL virtual path (s3://, gs://, az://, /vsi...).
func uploadFile(from, to string) error {
	if v := GDALName(to); strings.HasPrefix(v, "/vsi") {
		if err := geo.Upload(from, v); err != nil {
			return fmt.Errorf("upload %s: %w", to, err)
		}
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return uploadBytes(b, to)
}

func uploadBytes(b []byte, to string) error {
	if v := GDALName(to); strings.HasPrefix(v, "/vsi") {
		tmp, err := os.CreateTemp("", "pnec-upload-*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(b); err != nil {
			tmp.Close()
			return err
		}
		tmp.Close()
		return uploadFile(tmp.Name(), to)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("upload %s: %w", to, err)
	}
	return writeFileAtomic(to, b)
}

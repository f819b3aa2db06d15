package pipelines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/stac"
)

// Input is one scene to classify.
type Input struct {
	// Name is the GDAL dataset name the scene is opened with (a path, /vsi path, subdataset name).
	Name string `json:"input"`
	// Arg is the command-line argument the scene came from.
	Arg string `json:"arg,omitempty"`
	// Item is the STAC Item the scene came from ("" when not from STAC): a local path or a URL.
	Item string `json:"item,omitempty"`
	// ItemID, AssetKey: the source Item's id and the asset chosen.
	ItemID   string `json:"item_id,omitempty"`
	AssetKey string `json:"asset,omitempty"`
	// ItemDatetime, ItemUpdated: the source Item's datetime (or start_datetime) and updated, RFC 3339, "" when absent.
	ItemDatetime string `json:"-"`
	ItemUpdated  string `json:"-"`
	// Key names the scene's products (Key.tif, Key.json); unique within one expansion.
	Key string `json:"-"`
	// Mask is the GDAL name of the source Item's area-of-interest asset
	// (ExpandOptions.MaskRole), "" when none was asked for or found.
	Mask string `json:"mask,omitempty"`
	// catalog is the folder (or URL folder) of the catalog the scene came
	// from when the catalog policy confines it, "" when it is not confined
	// (ExpandOptions.AllowOutsideCatalog, a payload's Items, files).
	catalog string
}

// InputError is an argument, or a STAC Item it led to, that yields no scene.
type InputError struct {
	Input string // the argument, Item or asset concerned
	Err   error
}

func (e *InputError) Error() string { return e.Input + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Sentinel errors of input expansion.
var (
	ErrNoAsset = errors.New("no usable asset")
	// ErrOutsideCatalog: a STAC asset or link names a local file outside the
	// folder of the STAC document given as input (see ExpandOptions.AllowOutsideCatalog).
	ErrOutsideCatalog = errors.New("outside the catalog's folder")
	// ErrHrefEscapes is ErrOutsideCatalog (its earlier name).
	ErrHrefEscapes = ErrOutsideCatalog
	ErrNotSTAC     = errors.New("not a STAC Item, ItemCollection, Catalog or Collection")
	ErrNoMatch     = errors.New("no files match")
)

// OutsideError is a STAC href refused by the catalog policy: it names a
// local file outside the catalog's folder Root. errors.Is(err,
// ErrOutsideCatalog) holds.
type OutsideError struct {
	Href string // as the document gives it
	Why  string // how it leaves: "an absolute path", "../ past the folder", ...
	Root string // the folder of the STAC document given as input
	// What is refused: "" for an href of the document, "source" for a
	// source a VRT names, "file" for another file GDAL reads for a
	// dataset (its file list), "dataset" for a dataset whose content
	// cannot be checked (Href then names the dataset).
	What string
}

func (e *OutsideError) Error() string {
	href := e.Href
	if len(href) > 120 {
		href = href[:100] + "..."
	}
	switch e.What {
	case "dataset":
		return fmt.Sprintf("%s cannot be checked against the catalog's folder %s (%s): not read", href, e.Root, e.Why)
	case "source":
		return fmt.Sprintf("VRT source %q leads outside the catalog's folder %s (%s): not read", href, e.Root, e.Why)
	case "file":
		return fmt.Sprintf("file %q leads outside the catalog's folder %s (%s): not read", href, e.Root, e.Why)
	}
	return fmt.Sprintf("href %q leads outside the catalog's folder %s (%s): not read", href, e.Root, e.Why)
}

// Is makes errors.Is(err, ErrOutsideCatalog) true.
func (e *OutsideError) Is(target error) bool { return target == ErrOutsideCatalog }

// ExpandOptions tune Expand.
type ExpandOptions struct {
	// Asset is the asset key to take from STAC Items; "" takes the one asset with role "data".
	Asset string
	// MaskRole, when set, takes each STAC Item's asset with this role as
	// the scene's mask (Input.Mask; see maskAsset).
	MaskRole string
	// HTTPClient fetches STAC documents given as URLs; nil = http.DefaultClient.
	HTTPClient *http.Client
	// MaxDepth limits how deep Catalog/Collection child links are followed (default 8).
	MaxDepth int
	// Items are STAC Items given as JSON (a STAC task payload's features),
	// scenes like those of an Item file; ItemsBase is the file they came
	// from, which relative hrefs resolve against ("" = the working directory).
	Items     []json.RawMessage
	ItemsBase string
	// AllowOutsideCatalog lets STAC assets and links name local files
	// outside the catalog's folder: the folder of the STAC document given as
	// input (for a remote one, its URL's folder). By default they are
	// refused, whatever the way out: an absolute path or /vsi path, a file://
	// URL, ../ past the folder, or a symbolic link inside it that leads out,
	// so that a catalog cannot make a batch read arbitrary local files; the
	// sources of a VRT it names pass the same rules (checkOpens, per scene
	// before it is opened), and other XML dataset descriptions are refused.
	// Remote hrefs (http, https, s3, gs, az, abfs) are not local files and
	// are read either way.
	AllowOutsideCatalog bool
}

// rasterExts are the file name extensions a directory argument picks up.
var rasterExts = map[string]bool{
	".tif": true, ".tiff": true, ".vrt": true, ".img": true, ".bsq": true, ".bil": true,
	".bip": true, ".dat": true, ".h5": true, ".he5": true, ".hdf": true, ".nc": true, ".jp2": true,
}

// Expand turns arguments into scenes, sorted by Name, duplicates removed, with
// unique product keys. Arguments that yield no scene are returned as
// InputErrors; they do not stop the expansion of the others. Only ctx
// cancellation returns a non-nil error.
func Expand(ctx context.Context, args []string, opts ExpandOptions) ([]Input, []*InputError, error) {
	e := &expander{opts: opts, seen: map[string]bool{}}
	if e.opts.HTTPClient == nil {
		e.opts.HTTPClient = http.DefaultClient
	}
	if e.opts.MaxDepth == 0 {
		e.opts.MaxDepth = 8
	}
	for _, a := range args {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		e.arg(ctx, a, a)
	}
	for i, raw := range opts.Items {
		e.payloadItem(i, raw)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	uniq := e.unique()
	assignKeys(uniq)
	return uniq, e.errs, nil
}

// ErrSharedAsset: two distinct STAC Items name one data asset; the scene
// is classified once, for the first Item, and the others fail.
var ErrSharedAsset = errors.New("shares its data asset with another Item")

// unique is e.out sorted by Name (stably) with duplicates removed: a
// scene reached twice (the same file named twice, an Item reached through
// two catalogs, a file and the Item describing it) is classified once, as
// the first reached. Two distinct STAC Items (different ids) naming one
// data asset are not merged silently: the first Item keeps the scene and
// each other fails naming both, so that no Item leaves a run's output
// without a line saying why.
func (e *expander) unique() []Input {
	sort.SliceStable(e.out, func(i, j int) bool { return e.out[i].Name < e.out[j].Name })
	var uniq []Input
	owner := "" // the first Item id of the scene uniq's last
	for _, in := range e.out {
		n := len(uniq)
		if n == 0 || in.Name != uniq[n-1].Name {
			uniq = append(uniq, in)
			owner = in.ItemID
			continue
		}
		switch {
		case owner == "":
			owner = in.ItemID
		case in.ItemID != "" && in.ItemID != owner:
			ref := in.Item
			if ref == "" {
				ref = in.Arg
			}
			e.fail(ref, fmt.Errorf("Item %q %w: Item %q names the same %s; it is classified once, as Item %q's product: give each Item its own asset",
				in.ItemID, ErrSharedAsset, owner, in.Name, owner))
		}
	}
	return uniq
}

type expander struct {
	opts ExpandOptions
	out  []Input
	errs []*InputError
	seen map[string]bool // STAC documents visited
}

func (e *expander) fail(input string, err error) {
	e.errs = append(e.errs, &InputError{Input: input, Err: err})
}

func looksLikeJSON(a string) bool {
	p := a
	if stac.IsURL(a) {
		if u, err := url.Parse(a); err == nil {
			p = u.Path
		}
	}
	return strings.EqualFold(path.Ext(p), ".json") || strings.EqualFold(path.Ext(p), ".geojson")
}

func (e *expander) arg(ctx context.Context, a, origin string) {
	switch {
	case a == "":
		e.fail(origin, errors.New("empty input name"))
	case stac.IsURL(a) && looksLikeJSON(a):
		e.stac(ctx, a, origin, 0, rootOf(a))
	case stac.IsURL(a):
		e.out = append(e.out, Input{Name: "/vsicurl/" + a, Arg: origin})
	case strings.HasPrefix(a, "/vsi") || strings.Contains(a, ":") && !fileExists(a):
		// A GDAL virtual path or a subdataset name (HDF5:"f.h5"://x): GDAL decides.
		e.out = append(e.out, Input{Name: a, Arg: origin})
	case strings.ContainsAny(a, "*?[") && !fileExists(a):
		matches, err := filepath.Glob(a)
		if err != nil {
			e.fail(origin, fmt.Errorf("bad glob pattern: %w", err))
			return
		}
		if len(matches) == 0 {
			e.fail(origin, ErrNoMatch)
			return
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.IsDir() {
				continue // a glob names scenes; directories are taken only when named
			}
			if strings.HasPrefix(filepath.Base(m), ".") && !strings.HasPrefix(filepath.Base(a), ".") {
				continue // like a shell: * does not match hidden (and pnec's temporary) files
			}
			e.arg(ctx, m, origin)
		}
	default:
		st, err := os.Stat(a)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				e.fail(a, errors.New("no such file or directory"))
			} else {
				e.fail(a, err)
			}
			return
		}
		if st.IsDir() && !geo.IsDelivery(a) {
			e.dir(ctx, a, origin)
			return
		}
		if err := geo.CheckRegular(a); err != nil { // a FIFO would block the sniff, and GDAL
			e.fail(a, err)
			return
		}
		if looksLikeJSON(a) || sniffJSON(a) {
			e.stac(ctx, a, origin, 0, rootOf(a))
			return
		}
		e.out = append(e.out, Input{Name: a, Arg: origin})
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// sniffJSON reports whether a local file starts with '{' (a STAC document without a .json name).
func sniffJSON(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [64]byte
	n, _ := f.Read(b[:])
	s := strings.TrimLeft(string(b[:n]), " \t\r\n\ufeff")
	return strings.HasPrefix(s, "{")
}

// dir takes the raster files directly in d (not recursively), its
// product deliveries (an EnMAP folder or ZIP: one scene each) and its STAC
// Item files; the companions of another file's scene (EMIT's mask file, a
// product's quality layers) are not scenes.
func (e *expander) dir(ctx context.Context, d, origin string) {
	ents, err := os.ReadDir(d)
	if err != nil {
		e.fail(d, fmt.Errorf("read directory: %w", err))
		return
	}
	n := 0
	for _, ent := range ents {
		name := ent.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		ext := strings.ToLower(filepath.Ext(name))
		p := filepath.Join(d, name)
		switch {
		case ent.IsDir() || ext == ".zip":
			if geo.IsDelivery(p) {
				e.out = append(e.out, Input{Name: p, Arg: origin})
				n++
			}
		case geo.IsCompanion(name):
		case rasterExts[ext]:
			e.out = append(e.out, Input{Name: p, Arg: origin})
			n++
		case ext == ".json":
			e.stac(ctx, p, origin, 0, rootOf(p))
			n++
		}
	}
	if n == 0 {
		e.fail(d, errors.New("directory holds no raster or STAC files"))
	}
}

func (e *expander) read(ctx context.Context, loc string) ([]byte, error) {
	if !stac.IsURL(loc) {
		if err := geo.CheckRegular(loc); err != nil {
			return nil, err
		}
		f, err := os.Open(loc)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return stac.ReadDocument(f)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	return stac.ReadDocument(resp.Body)
}

// stacDoc is the part of any STAC document Expand reads.
type stacDoc struct {
	Type       string               `json:"type"`
	ID         string               `json:"id"`
	Properties map[string]any       `json:"properties"`
	Assets     map[string]stacAsset `json:"assets"`
	Features   []json.RawMessage    `json:"features"`
	Links      []stacLink           `json:"links"`
}

type stacAsset struct {
	Href  string   `json:"href"`
	Type  string   `json:"type"`
	Roles []string `json:"roles"`
}

type stacLink struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

// rootOf is the catalog folder of a STAC document given as input: its
// directory, absolute (a local file), or its URL up to the last '/'.
func rootOf(loc string) string {
	if stac.IsURL(loc) {
		if u, err := url.Parse(loc); err == nil {
			u.RawQuery, u.Fragment = "", ""
			u.Path = u.Path[:strings.LastIndex(u.Path, "/")+1]
			return u.String()
		}
		return loc
	}
	if abs, err := filepath.Abs(filepath.Dir(loc)); err == nil {
		return abs
	}
	return filepath.Dir(loc)
}

// stac reads the STAC document at loc (a local path or URL), found from
// the input origin under the catalog folder root (rootOf the input).
func (e *expander) stac(ctx context.Context, loc, origin string, depth int, root string) {
	if e.seen[loc] {
		return
	}
	e.seen[loc] = true
	b, err := e.read(ctx, loc)
	if err != nil {
		e.fail(loc, fmt.Errorf("read STAC document: %w", err))
		return
	}
	var d stacDoc
	if err := json.Unmarshal(b, &d); err != nil {
		e.fail(loc, fmt.Errorf("bad JSON: %w", err))
		return
	}
	switch d.Type {
	case "Feature":
		e.item(loc, origin, root, d)
	case "FeatureCollection":
		if len(d.Features) == 0 {
			e.fail(loc, errors.New("ItemCollection has no features"))
		}
		for i, raw := range d.Features {
			var it stacDoc
			if err := json.Unmarshal(raw, &it); err != nil || it.Type != "Feature" {
				e.fail(fmt.Sprintf("%s#features/%d", loc, i), errors.New("not a STAC Item"))
				continue
			}
			e.item(loc, origin, root, it)
		}
	case "Catalog", "Collection":
		if depth >= e.opts.MaxDepth {
			e.fail(loc, fmt.Errorf("catalog nesting deeper than %d levels", e.opts.MaxDepth))
			return
		}
		n := 0
		for _, l := range d.Links {
			if l.Rel != "item" && l.Rel != "child" {
				continue
			}
			n++
			target, err := resolveHref(loc, l.Href)
			if err == nil {
				err = e.inside(root, l.Href, target)
			}
			if err != nil {
				e.fail(loc, fmt.Errorf("link: %w", err))
				continue
			}
			e.stac(ctx, target, origin, depth+1, root)
		}
		if n == 0 {
			e.fail(loc, errors.New("catalog has no item or child links"))
		}
	default:
		e.fail(loc, fmt.Errorf("%w (type %q)", ErrNotSTAC, d.Type))
	}
}

// MaxItemIDBytes bounds a STAC Item id: it names the product's files and
// travels in every message, report line and Item about the scene (a 50 MB
// id made a 100 MB stderr line and 1.35 GB RSS). Real ids are tens of bytes.
const MaxItemIDBytes = 1024

func (e *expander) item(loc, origin, root string, d stacDoc) {
	if len(d.ID) > MaxItemIDBytes {
		e.fail(loc, fmt.Errorf("STAC Item id of %d bytes: want at most %d", len(d.ID), MaxItemIDBytes))
		return
	}
	name := loc
	if d.ID != "" {
		name = loc + "#" + d.ID
	}
	key, err := chooseAsset(d.Assets, e.opts.Asset)
	if err != nil {
		e.fail(name, err)
		return
	}
	scene, err := e.assetName(loc, root, key, d.Assets[key].Href)
	if err != nil {
		e.fail(name, err)
		return
	}
	in := Input{Name: scene, Arg: origin, Item: loc, ItemID: d.ID, AssetKey: key}
	if root != "" && !e.opts.AllowOutsideCatalog {
		in.catalog = root
	}
	if s, ok := d.Properties["datetime"].(string); ok {
		in.ItemDatetime = s
	} else if s, ok := d.Properties["start_datetime"].(string); ok {
		in.ItemDatetime = s
	}
	in.ItemUpdated, _ = d.Properties["updated"].(string)
	if e.opts.MaskRole != "" {
		mk, err := maskAsset(d.Assets, e.opts.MaskRole)
		if err == nil && mk != "" {
			in.Mask, err = e.assetName(loc, root, mk, d.Assets[mk].Href)
			if err != nil {
				err = fmt.Errorf("mask %w", err)
			}
		}
		if err != nil {
			e.fail(name, err)
			return
		}
	}
	e.out = append(e.out, in)
}

// assetName is the GDAL name of the asset key with href of the STAC
// document at loc, under the catalog folder root: every asset pnec opens
// (the scene, its mask) passes the one catalog policy here (inside).
func (e *expander) assetName(loc, root, key, href string) (string, error) {
	if root != "" && !e.opts.AllowOutsideCatalog && isInlineXML(href) {
		return "", fmt.Errorf("asset %q: %w", key, &OutsideError{Href: href, Root: root,
			Why: "XML in place of a path, which GDAL opens as a dataset (a VRT) that may read any file"})
	}
	target, err := resolveHref(loc, href)
	if err != nil {
		return "", fmt.Errorf("asset %q href %q: %w", key, href, err)
	}
	if err := e.inside(root, href, target); err != nil {
		return "", fmt.Errorf("asset %q: %w", key, err)
	}
	return stac.GDALName(target), nil
}

// chooseAsset picks want, or the single asset with role "data".
func chooseAsset(assets map[string]stacAsset, want string) (string, error) {
	keys := make([]string, 0, len(assets))
	for k := range assets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want != "" {
		if a, ok := assets[want]; ok {
			if a.Href == "" {
				return "", fmt.Errorf("%w: asset %q has no href", ErrNoAsset, want)
			}
			return want, nil
		}
		return "", fmt.Errorf("%w: item has no asset %q (assets: %s)", ErrNoAsset, want, strings.Join(keys, ", "))
	}
	var data []string
	for _, k := range keys {
		for _, r := range assets[k].Roles {
			if r == "data" {
				data = append(data, k)
				break
			}
		}
	}
	switch len(data) {
	case 1:
		if assets[data[0]].Href == "" {
			return "", fmt.Errorf("%w: asset %q has no href", ErrNoAsset, data[0])
		}
		return data[0], nil
	case 0:
		return "", fmt.Errorf("%w: no asset has role \"data\"; name the one to classify (assets: %s)", ErrNoAsset, strings.Join(keys, ", "))
	default:
		return "", fmt.Errorf("%w: several assets have role \"data\" (%s); name the one to classify", ErrNoAsset, strings.Join(data, ", "))
	}
}

// resolveHref resolves href against the document at base (a local path or
// URL): a URL of a remote scheme stays as it is, file:// becomes its path,
// an absolute path or /vsi path stays, and a relative href is joined to the
// document's directory (or URL). Whether the target may be read is
// expander.inside's to say.
func resolveHref(base, href string) (string, error) {
	if href == "" {
		return "", errors.New("empty href")
	}
	if u, err := url.Parse(href); err == nil && stac.HasScheme(href) {
		switch u.Scheme {
		case "http", "https", "s3", "gs", "az", "abfs":
			return href, nil
		case "file":
			return u.Path, nil
		default:
			return "", fmt.Errorf("unsupported URL scheme %q", u.Scheme)
		}
	}
	if strings.HasPrefix(href, "/") {
		return href, nil
	}
	clean := path.Clean(strings.ReplaceAll(href, "\\", "/"))
	if stac.IsURL(base) {
		b, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		r, err := url.Parse(clean)
		if err != nil {
			return "", err
		}
		return b.ResolveReference(r).String(), nil
	}
	return filepath.Join(filepath.Dir(base), filepath.FromSlash(clean)), nil
}

// isRemote reports whether target (resolveHref's, or a GDAL name) is read
// over a network: a remote URL, an object store's /vsi path, or /vsicurl/
// (/vsiwebhdfs/) of an http(s) URL: /vsicurl/file:///x reads a local file.
func isRemote(target string) bool {
	lower := strings.ToLower(target)
	for _, p := range []string{"http://", "https://", "s3://", "gs://", "az://", "abfs://"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	for _, p := range []string{"/vsis3/", "/vsigs/", "/vsiaz/", "/vsiadls/", "/vsioss/", "/vsiswift/",
		"/vsis3_streaming/", "/vsigs_streaming/", "/vsiaz_streaming/", "/vsioss_streaming/", "/vsiswift_streaming/"} {
		if strings.HasPrefix(target, p) {
			return true
		}
	}
	for _, p := range []string{"/vsicurl/", "/vsicurl_streaming/", "/vsiwebhdfs/"} {
		if strings.HasPrefix(target, p) {
			rest := lower[len(p):]
			return strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://")
		}
	}
	return false
}

// isInlineXML reports whether an href holds XML (a VRT or another dataset
// description GDAL opens from the name itself): no URI holds < or >.
func isInlineXML(href string) bool { return strings.ContainsAny(href, "<>") }

// inside applies the catalog policy (ExpandOptions.AllowOutsideCatalog) to
// href, resolved to target, of a document under the catalog folder root
// ("" for a STAC task payload's Items, which are not confined).
func (e *expander) inside(root, href, target string) error {
	if e.opts.AllowOutsideCatalog || root == "" {
		return nil
	}
	relative := !strings.HasPrefix(href, "/") && !stac.HasScheme(href)
	out := func(why string) error { return &OutsideError{Href: href, Why: why, Root: root} }
	switch {
	case isRemote(target):
		// Another server or bucket is no local file; a relative href of a
		// remote catalog stays under its folder like a local one's.
		if relative && stac.IsURL(root) && !strings.HasPrefix(target, root) {
			return out("../ past the folder")
		}
		return nil
	case strings.HasPrefix(target, "/vsi"):
		return out("a GDAL virtual path, which may read any local file")
	case stac.IsURL(root):
		return out("a local file named by a remote catalog")
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return out("a path that cannot be located")
	}
	if !within(root, abs) {
		switch {
		case strings.HasPrefix(strings.ToLower(href), "file:"):
			return out("a file:// URL")
		case !relative:
			return out("an absolute path")
		}
		return out("../ past the folder")
	}
	// A symbolic link inside the folder may lead out of it (the folder
	// itself may be reached through one).
	if real := samefile.Resolve(abs); !within(samefile.Resolve(root), real) {
		return out("through a symbolic link, to " + real)
	}
	return nil
}

// within reports whether the absolute path p is root or under it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// assignKeys gives each input a product key: the STAC Item id or the file
// name without extension, made safe for file names (at most maxKeyBytes: a
// longer one is cut and ends with a hash of the whole); keys that collide get a
// short hash of the dataset name appended, so the keys do not depend on which
// shard runs.
func assignKeys(in []Input) {
	count := map[string]int{}
	for i := range in {
		in[i].Key = baseKey(in[i])
		count[in[i].Key]++
	}
	for i := range in {
		if count[in[i].Key] > 1 {
			h := sha256.Sum256([]byte(in[i].Name))
			in[i].Key += "-" + hex.EncodeToString(h[:4])
		}
	}
}

func baseKey(in Input) string {
	var k string
	if in.ItemID != "" {
		k = in.ItemID
	} else {
		n := in.Name
		if i := strings.LastIndexAny(n, "/\\"); i >= 0 {
			n = n[i+1:]
		}
		n = strings.Trim(n, "\"")
		if ext := path.Ext(n); ext != "" && len(ext) < len(n) {
			n = strings.TrimSuffix(n, ext)
		}
		k = n
	}
	var b strings.Builder
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		s = "scene"
	}
	if len(s) > maxKeyBytes {
		// The key names files (KEY.probabilities.tif, their temporaries),
		// which a file system limits to 255 bytes: a long id is cut and a
		// hash of the whole id keeps it apart from others cut alike.
		h := sha256.Sum256([]byte(k))
		s = s[:maxKeyBytes-keyHashChars-1] + "-" + hex.EncodeToString(h[:])[:keyHashChars]
	}
	return s
}

// maxKeyBytes is the longest product key: KEY and the longest name pnec
// makes of it (".KEY.probabilities.tif.aux.xml", a temporary's random
// part) stay well under the 255 bytes of a file name. keyHashChars is the
// hash a longer key ends with.
const (
	maxKeyBytes  = 120
	keyHashChars = 16
)

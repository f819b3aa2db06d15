package pipelines

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/stac"
)

// checkOpens applies the catalog policy to what a confined scene's
// datasets (the scene's asset, its mask asset) open, before GDAL opens
// them: a VRT's sources, at any depth of VRTs, must be what the catalog
// could name as hrefs (geo.WalkVRT reads a source only after it passed),
// and an XML dataset description other than a VRT (GDAL_WMS, MRF, WCS...),
// whose references pnec does not read, is refused. Inputs the policy does
// not confine (Input.catalog "") pass. Its errors are *OutsideError.
func checkOpens(in Input) error {
	if in.catalog == "" {
		return nil
	}
	for _, name := range []string{in.Name, in.Mask} {
		if name == "" {
			continue
		}
		if err := checkDataset(in.catalog, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// checkDataset is checkOpens for one dataset of a catalog under root.
func checkDataset(root, name string) error {
	unchecked := func(why string) error { return &OutsideError{What: "dataset", Href: name, Why: why, Root: root} }
	kind, err := geo.XMLDescription(name)
	switch {
	case err != nil:
		return unchecked(err.Error())
	case kind == "":
		return nil
	case kind != "VRTDataset":
		return unchecked(fmt.Sprintf("an XML dataset description <%s>, not a VRT: pnec does not check what it reads", kind))
	}
	// A mosaic names one file in many sources (a band each, a block each):
	// each name is checked once.
	checked := map[geo.VRTSource]bool{}
	err = geo.WalkVRT(name, func(s geo.VRTSource) error {
		key := geo.VRTSource{Href: s.Href, Name: s.Name, RelativeToVRT: s.RelativeToVRT}
		if checked[key] {
			return nil
		}
		checked[key] = true
		err := sourceInside(root, s)
		if err == nil {
			// A source that is another kind of XML description is refused
			// as the asset would be (a VRT source is walked by WalkVRT).
			if kind, kerr := geo.XMLDescription(s.Name); kerr == nil && kind != "" && kind != "VRTDataset" {
				err = &OutsideError{What: "dataset", Href: s.Name, Root: root,
					Why: fmt.Sprintf("an XML dataset description <%s>, not a VRT: pnec does not check what it reads", kind)}
			}
		}
		if err != nil && s.VRT != name {
			err = fmt.Errorf("through VRT %s: %w", s.VRT, err)
		}
		return err
	})
	var oe *OutsideError
	if err != nil && !errors.As(err, &oe) {
		return unchecked(err.Error()) // an unreadable, too deep or too large VRT
	}
	return err
}

// sourceInside applies the catalog policy of hrefs (expander.inside) to a
// source a VRT of the catalog under root names, resolved as GDAL resolves
// it: relative to the VRT's folder with relativeToVRT="1", else relative to
// the working directory.
func sourceInside(root string, s geo.VRTSource) error {
	out := func(why string) error { return &OutsideError{What: "source", Href: s.Href, Why: why, Root: root} }
	name := s.Name
	if stac.IsURL(strings.ToLower(name)) {
		name = "/vsicurl/" + name
	}
	relative := !strings.HasPrefix(s.Href, "/") && !schemePrefix.MatchString(s.Href)
	switch {
	case isInlineXML(s.Href):
		return out("XML in place of a path, which GDAL opens as a dataset that may read any file")
	case isRemote(name):
		// As an href: another server is no local file; a source relative
		// to a remote VRT stays under the catalog's URL folder.
		if relative && s.RelativeToVRT && stac.IsURL(root) && !strings.HasPrefix(cleanURL(name), root) {
			return out("../ past the folder")
		}
		return nil
	case strings.HasPrefix(name, "/vsi"):
		return out("a GDAL virtual path, which may read any local file")
	case schemePrefix.MatchString(name) && !fileExists(name):
		return out("a driver-prefixed GDAL name or URL scheme, which may read any local file")
	case stac.IsURL(root):
		return out("a local file named by a remote catalog")
	}
	abs, err := filepath.Abs(name) // a relative name is under the working directory
	if err != nil {
		return out("a path that cannot be located")
	}
	if !within(root, abs) {
		switch {
		case !relative:
			return out("an absolute path")
		case !s.RelativeToVRT:
			return out(`relativeToVRT="0": a path under the working directory`)
		}
		return out("../ past the folder")
	}
	// The name as the system resolves it (a link's ../ is taken after the
	// link, which filepath.Abs's lexical cleaning does not do).
	if real, err := filepath.EvalSymlinks(name); err == nil {
		if real, err = filepath.Abs(real); err == nil && !within(samefile.Resolve(root), real) {
			return out("through a symbolic link, to " + real)
		}
	}
	return nil
}

// cleanURL is the URL of a /vsicurl/ name with its path's ../ taken (as
// curl sends it), for the comparison with a catalog's URL folder.
func cleanURL(name string) string {
	u := strings.TrimPrefix(strings.TrimPrefix(name, "/vsicurl_streaming/"), "/vsicurl/")
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	clean := path.Clean(p.Path)
	if strings.HasSuffix(p.Path, "/") && clean != "/" {
		clean += "/"
	}
	p.Path, p.RawPath = clean, ""
	return p.String()
}

// schemePrefix matches a URL scheme or a driver prefix (HDF5:, vrt://,
// NETCDF:): two characters or more before the colon, so that a Windows
// drive is none.
var schemePrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+.-]+:`)

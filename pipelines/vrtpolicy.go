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
	return checkDatasetDepth(root, name, 0)
}

// maxListDepth bounds how deep checkFileList follows datasets that list
// VRTs that list datasets (a STAC ITem JSON's VRT of a VRT...).
const maxListDepth = 8

func checkDatasetDepth(root, name string, depth int) error {
	unchecked := func(why string) error { return &OutsideError{What: "dataset", Href: name, Why: why, Root: root} }
	kind, err := geo.XMLDescription(name)
	switch {
	case err != nil:
		return unchecked(err.Error())
	case kind == "":
		return checkFileList(root, name, depth)
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
			switch kind, kerr := geo.XMLDescription(s.Name); {
			case kerr == nil && kind != "" && kind != "VRTDataset":
				err = &OutsideError{What: "dataset", Href: s.Name, Root: root,
					Why: fmt.Sprintf("an XML dataset description <%s>, not a VRT: pnec does not check what it reads", kind)}
			case kerr == nil && kind == "":
				// A source that is not a VRT may still read other files
				// (a PDS label's image, a STAC ITem JSON's assets, an
				// HDF5 file's external storage).
				err = checkFileList(root, s.Name, depth)
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

// checkFileList applies the catalog policy to every file GDAL reads for
// the dataset name besides name itself (geo.DatasetFiles: GDAL's own list,
// which covers a PDS label's image, an ENVI header, a STAC ITem JSON's
// assets, a VRT's sources), following the VRTs listed, and to what an HDF5
// (or netCDF-4) file makes the HDF5 library read, which GDAL does not
// list (external storage, virtual datasets' sources, external links):
// such an HDF5 file is refused, as XML descriptions other than VRTs are.
func checkFileList(root, name string, depth int) error {
	if depth > maxListDepth {
		return &OutsideError{What: "dataset", Href: name, Root: root, Why: fmt.Sprintf("files listing files more than %d deep", maxListDepth)}
	}
	if !isRemote(name) && !strings.HasPrefix(name, "/vsi") {
		refs, err := geo.HDF5References(name)
		if err != nil {
			return &OutsideError{What: "dataset", Href: name, Root: root, Why: err.Error()}
		}
		if len(refs) > 0 {
			return &OutsideError{What: "dataset", Href: name, Root: root,
				Why: fmt.Sprintf("an HDF5 file that reads other files (%s %q): pnec does not check what the HDF5 library reads", refs[0].What, refs[0].Name)}
		}
	}
	for _, f := range geo.DatasetFiles(name) {
		if f == name || sameLocal(f, name) {
			continue
		}
		err := sourceInside(root, geo.VRTSource{Href: f, Name: f, RelativeToVRT: true})
		if err == nil && stac.IsURL(root) && remoteOutside(root, f) {
			// GDAL lists a remote dataset's files as URLs, whether its
			// document named them by ../ or in full: one on the catalog's
			// server must be under its URL folder.
			err = &OutsideError{What: "file", Href: f, Root: root, Why: "../ past the folder"}
		}
		if err != nil {
			var oe *OutsideError
			if errors.As(err, &oe) {
				why := fmt.Sprintf("a file GDAL reads for %s", name)
				if oe.Why != "an absolute path" { // GDAL lists absolute paths, whatever the dataset wrote
					why += ": " + oe.Why
				}
				return &OutsideError{What: "file", Href: f, Root: root, Why: why}
			}
			return err
		}
		if kind, err := geo.XMLDescription(f); err == nil && kind != "" {
			if err := checkDatasetDepth(root, f, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameLocal reports whether the local names a and b are the same path.
func sameLocal(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// remoteOutside reports whether the remote file f (a URL or a /vsicurl/
// name) is on the server of the catalog's URL folder root but not under
// that folder.
func remoteOutside(root, f string) bool {
	u := cleanURL(f)
	if !stac.IsURL(u) {
		return false
	}
	pu, err1 := url.Parse(u)
	pr, err2 := url.Parse(root)
	if err1 != nil || err2 != nil || pu.Scheme != pr.Scheme || pu.Host != pr.Host {
		return false
	}
	return !strings.HasPrefix(u, root)
}

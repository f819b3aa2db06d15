package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <cpl_vsi.h>
#include <cpl_error.h>

// pnecVSIRead reads up to n bytes of the GDAL virtual file name into buf,
// GDAL's messages silenced (the caller words the error). It returns the
// bytes read, or -1 when the file does not open.
static long long pnecVSIRead(const char *name, char *buf, long long n) {
	CPLPushErrorHandler(CPLQuietErrorHandler);
	VSILFILE *f = VSIFOpenL(name, "rb");
	long long got = -1;
	if (f != NULL) {
		got = (long long)VSIFReadL(buf, 1, (size_t)n, f);
		VSIFCloseL(f);
	}
	CPLPopErrorHandler();
	return got;
}
*/
import "C"

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unsafe"
)

// VRTSource is a dataset a VRT names: a band's source (SimpleSource,
// ComplexSource, ...), a warped VRT's source dataset, a raw band's file, an
// overview or a pansharpening input.
type VRTSource struct {
	// Href is the name as the VRT writes it.
	Href string
	// Name is the GDAL dataset name it opens: Href joined to the VRT's
	// folder when RelativeToVRT is set and Href is relative, as GDAL joins
	// them (without cleaning ../), else Href (a relative Href then names a
	// path under the working directory).
	Name string
	// RelativeToVRT: the VRT asks GDAL to resolve a relative Href against
	// its folder.
	RelativeToVRT bool
	// VRT is the VRT that names the source: its GDAL name, or "inline VRT
	// XML" for XML given as a dataset name.
	VRT string
	// Depth is 1 for the sources of the VRT walked, 2 for the sources of
	// those that are VRTs, and so on.
	Depth int
}

// SkipSource, returned by WalkVRT's visit function, accepts a source but
// does not read it: a source that is itself a VRT is not walked.
var SkipSource = errors.New("skip this source")

// ErrVRT: a VRT that cannot be walked (unreadable, not XML, too large, too
// deep, naming too many datasets).
var ErrVRT = errors.New("VRT cannot be checked")

// Limits of a VRT walk: the text read of one VRT, how deep VRTs may nest
// and how many datasets a walk visits in all. GDAL reads a VRT whole into
// memory too; 64 MiB is some 200,000 sources.
const (
	maxVRTBytes    = 64 << 20
	maxVRTDepth    = 16
	maxVRTDatasets = 100000
	// vrtHeaderBytes is what GDAL reads of a file to identify its driver:
	// the VRT driver claims a file whose first 1024 bytes hold "<VRTDataset".
	vrtHeaderBytes = 1024
)

// WalkVRT calls visit for every dataset the VRT name opens: each source of
// the VRT, then, for each source that is itself a VRT (GDAL decides by
// content, so a source is read to tell), the sources of that one, to any
// depth. A VRT's sources are all visited before any of them is read, so a
// visit that refuses a source (returns an error, which WalkVRT returns)
// keeps it from being read; SkipSource accepts a source without reading it.
// Names are read as GDAL reads them: a local file (a FIFO or device is
// refused, not opened), a /vsi path or an http(s) URL through GDAL's
// virtual file systems, VRT XML given as the name itself, and vrt://PATH?...
// (which opens PATH). A name that is no VRT gives no call and nil; a
// driver-prefixed name (HDF5:"f.h5"://x, NETCDF:...) is not read.
func WalkVRT(name string, visit func(VRTSource) error) error {
	register()
	w := &vrtWalk{visit: visit, seen: map[string]bool{name: true}}
	return w.walk(name, 0)
}

// VRTFiles lists the local files a VRT reads (WalkVRT), at any depth of
// VRTs of local files, without the VRT itself; remote and driver-prefixed
// sources are not read. nil for a name that is no VRT or cannot be walked:
// opening it reports why.
func VRTFiles(name string) []string {
	var out []string
	seen := map[string]bool{}
	_ = WalkVRT(name, func(s VRTSource) error {
		if !localName(s.Name) {
			return SkipSource
		}
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
		return nil
	})
	return out
}

type vrtWalk struct {
	visit func(VRTSource) error
	seen  map[string]bool
	n     int // datasets visited
}

func (w *vrtWalk) walk(name string, depth int) error {
	srcs, err := vrtSourcesOf(name)
	if err != nil || len(srcs) == 0 {
		return err
	}
	if depth >= maxVRTDepth {
		return fmt.Errorf("%w: %s: VRTs nested deeper than %d levels", ErrVRT, vrtLabel(name), maxVRTDepth)
	}
	var next []VRTSource
	for _, s := range srcs {
		s.Depth = depth + 1
		if w.n++; w.n > maxVRTDatasets {
			return fmt.Errorf("%w: %s names more than %d datasets", ErrVRT, vrtLabel(name), maxVRTDatasets)
		}
		switch err := w.visit(s); {
		case errors.Is(err, SkipSource):
		case err != nil:
			return err
		case !w.seen[s.Name]:
			w.seen[s.Name] = true
			next = append(next, s)
		}
	}
	for _, s := range next {
		if err := w.walk(s.Name, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// vrtLabel names a VRT in messages (inline XML is not repeated).
func vrtLabel(name string) string {
	if isInlineXML(name) {
		return "inline VRT XML"
	}
	return name
}

func isInlineXML(name string) bool { return strings.HasPrefix(strings.TrimSpace(name), "<") }

// driverPrefix matches a driver-prefixed dataset name (HDF5:, NETCDF:,
// GTIFF_DIR:, vrt:// ...): two characters or more before the colon, so that
// a Windows drive is none.
var driverPrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]+:`)

// localName reports whether a GDAL dataset name is a path of the local
// file system: not a /vsi path, URL, inline XML or driver-prefixed name.
func localName(name string) bool {
	switch {
	case name == "", strings.HasPrefix(name, "/vsi"), isInlineXML(name):
		return false
	case driverPrefix.MatchString(name):
		_, err := os.Stat(name) // a file of that very name
		return err == nil
	}
	return true
}

// vrtSourcesOf reads the dataset name and returns its sources when it is a
// VRT, nil when it is not.
func vrtSourcesOf(name string) ([]VRTSource, error) {
	switch lower := strings.ToLower(name); {
	case strings.HasPrefix(lower, "vrt://"):
		// GDAL opens the path before the options, relative to the
		// working directory.
		p, _, _ := strings.Cut(name[len("vrt://"):], "?")
		return []VRTSource{{Href: p, Name: p, VRT: name}}, nil
	case isInlineXML(name):
		if !strings.Contains(name, "<VRTDataset") {
			return nil, nil
		}
		// GDAL has no folder for inline XML: relative sources name paths
		// under the working directory.
		return parseVRT([]byte(name), "", "inline VRT XML")
	case !strings.HasPrefix(name, "/vsi") && !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") &&
		driverPrefix.MatchString(name) && !localName(name):
		return nil, nil // a driver reads it, not the VRT driver
	}
	head, err := readDataset(name, vrtHeaderBytes)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(head, []byte("<VRTDataset"))
	if i < 0 {
		return nil, nil
	}
	text, err := readDataset(name, maxVRTBytes+1)
	if err != nil {
		return nil, err
	}
	if len(text) > maxVRTBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrVRT, name, maxVRTBytes)
	}
	// GDAL parses from the element on, whatever comes before it.
	return parseVRT(text[i:], vrtFolder(name), name)
}

// readDataset reads up to n bytes of the dataset name: a local file (not
// a FIFO or device: reading it would block), or a /vsi path or http(s) URL
// through GDAL's virtual file systems, as GDAL would read it.
func readDataset(name string, n int) ([]byte, error) {
	lower := strings.ToLower(name)
	vsi := name
	switch {
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"):
		vsi = "/vsicurl/" + name
	case !strings.HasPrefix(name, "/vsi"):
		if err := CheckRegular(name); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrVRT, name, err)
		}
		f, err := os.Open(name)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil // nothing to walk: opening it reports the missing file
			}
			return nil, fmt.Errorf("%w: %w", ErrVRT, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, int64(n)))
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrVRT, name, err)
		}
		return b, nil
	}
	cn := C.CString(vsi)
	defer C.free(unsafe.Pointer(cn))
	buf := make([]byte, n)
	got := C.pnecVSIRead(cn, (*C.char)(unsafe.Pointer(&buf[0])), C.longlong(n))
	if got < 0 {
		return nil, nil // it does not open: opening it reports why
	}
	return buf[:got], nil
}

// vrtFolder is the folder GDAL resolves a VRT's relative sources against:
// the name up to its last '/' ("" when it has none).
func vrtFolder(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[:i]
	}
	return ""
}

// isRelativeGDAL is CPLIsFilenameRelative: not a name that starts with a
// slash or backslash, a drive (C:/, C:\) or holds "://" (a URL).
func isRelativeGDAL(name string) bool {
	switch {
	case name == "":
		return true
	case name[0] == '/' || name[0] == '\\':
		return false
	case len(name) > 2 && (name[1:3] == ":/" || name[1:3] == ":\\"):
		return false
	case strings.Contains(name[1:], "://"):
		return false
	}
	return true
}

// parseVRT lists the datasets VRT XML names: the text of every
// SourceFilename and SourceDataset element, at any level (GDAL's element
// and attribute names are case-insensitive), with its relativeToVRT.
func parseVRT(text []byte, folder, label string) ([]VRTSource, error) {
	d := xml.NewDecoder(bytes.NewReader(text))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // names are ASCII
	var out []VRTSource
	var cur *VRTSource
	var buf strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not XML pnec can read: %w", ErrVRT, label, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if cur != nil {
				// An element inside a source name: GDAL would read its
				// text only; refuse what cannot be named plainly.
				return nil, fmt.Errorf("%w: %s: element <%s> inside <%s>", ErrVRT, label, t.Name.Local, "SourceFilename")
			}
			if n := strings.ToLower(t.Name.Local); n == "sourcefilename" || n == "sourcedataset" {
				cur = &VRTSource{VRT: label}
				for _, a := range t.Attr {
					if strings.EqualFold(a.Name.Local, "relativeToVRT") {
						v, _ := strconv.Atoi(leadingDigits(strings.TrimSpace(a.Value)))
						cur.RelativeToVRT = v != 0
					}
				}
				buf.Reset()
			}
		case xml.CharData:
			if cur != nil {
				buf.Write(t)
			}
		case xml.EndElement:
			if cur == nil {
				continue
			}
			cur.Href = strings.TrimSpace(buf.String())
			cur.Name = cur.Href
			if cur.RelativeToVRT && folder != "" && isRelativeGDAL(cur.Href) {
				cur.Name = folder + "/" + cur.Href
			}
			if cur.Href != "" {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
}

// leadingDigits is the digits s starts with (atoi's reading of "1abc").
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// XMLDescription is the root element of a dataset GDAL opens from an XML
// description, read from its first bytes: "VRTDataset", "GDAL_WMS",
// "MRF_META", "WCS_GDAL" ...; "" when the dataset does not start as XML (a
// GeoTIFF, say) or cannot be read (opening it reports why). Such
// descriptions may name further files or URLs.
func XMLDescription(name string) (string, error) {
	if isInlineXML(name) {
		return rootElement([]byte(name)), nil
	}
	if driverPrefix.MatchString(name) && !localName(name) && !strings.HasPrefix(strings.ToLower(name), "http") {
		return "", nil
	}
	head, err := readDataset(name, vrtHeaderBytes)
	if err != nil {
		return "", err
	}
	if bytes.Contains(head, []byte("<VRTDataset")) {
		return "VRTDataset", nil
	}
	return rootElement(head), nil
}

// rootElement is the name of the first element of text when text starts
// as XML (after a byte order mark, white space, a declaration or
// comments), else "".
func rootElement(text []byte) string {
	t := bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	for {
		t = bytes.TrimLeft(t, " \t\r\n")
		switch {
		case bytes.HasPrefix(t, []byte("<?")):
			i := bytes.Index(t, []byte("?>"))
			if i < 0 {
				return "?xml"
			}
			t = t[i+2:]
		case bytes.HasPrefix(t, []byte("<!--")):
			i := bytes.Index(t, []byte("-->"))
			if i < 0 {
				return "!--"
			}
			t = t[i+3:]
		case bytes.HasPrefix(t, []byte("<")):
			t = t[1:]
			end := bytes.IndexAny(t, " \t\r\n/>")
			if end < 0 {
				end = len(t)
			}
			if end == 0 {
				return "<"
			}
			return string(t[:end])
		default:
			return ""
		}
	}
}

package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <gdal.h>
#include <cpl_error.h>
#include <cpl_string.h>

// pnecFileList opens name read-only with GDAL's messages silenced (a name
// GDAL cannot open is Open's to report) and returns its file list, or NULL.
static char **pnecFileList(const char *name) {
	CPLPushErrorHandler(CPLQuietErrorHandler);
	GDALDatasetH ds = GDALOpenEx(name, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
	char **list = NULL;
	if (ds != NULL) {
		list = GDALGetFileList(ds);
		GDALClose(ds);
	}
	CPLPopErrorHandler();
	return list;
}
*/
import "C"

import "unsafe"

// DatasetFiles lists the files GDAL reads for the dataset name: the file
// itself, its sidecars (.aux.xml, an ENVI .hdr, .ovr, .msk) and, for a VRT,
// its sources. It is empty when GDAL cannot open name (Open reports why).
// It opens the dataset once more, so callers that guard outputs against
// inputs call it before Open, not while the scene is open. A FIFO or other
// special file, or a VRT reading one (CheckOpenable), is not opened: reading it would block; the
// list is then empty and Open reports why.
func DatasetFiles(name string) []string {
	if CheckOpenable(name) != nil {
		return nil
	}
	register()
	defer onQuietThread()()
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	list := C.pnecFileList(cn)
	if list == nil {
		return nil
	}
	defer C.CSLDestroy(list)
	n := int(C.CSLCount(list))
	out := make([]string, 0, n)
	for _, p := range unsafe.Slice(list, n) {
		out = append(out, C.GoString(p))
	}
	return out
}

// ProductFiles are the files a product at path writes: the COG, its .aux.xml
// sidecar, the QGIS style, the class probabilities file and, with
// reliabilityFloat32, the Float32
// reliability COG (and its sidecar), with what each is in words.
func ProductFiles(path string, reliabilityFloat32 bool) (paths, roles []string) {
	// The probabilities file is listed whether or not it is asked for: an
	// input of that name beside the product is refused either way, which
	// costs nothing and keeps the list independent of the options.
	paths = []string{path, path + auxSuffix, StylePath(path), ProbabilitiesPath(path), ThumbnailPath(path)}
	roles = []string{"the product", "the product's sidecar", "the product's QGIS style", "the product's probabilities file", "the product's thumbnail"}
	if reliabilityFloat32 {
		rel := ReliabilityPath(path)
		paths = append(paths, rel, rel+auxSuffix)
		roles = append(roles, "the product's Float32 reliability file", "the product's Float32 reliability sidecar")
	}
	return paths, roles
}

package geo

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>

// pnec_h5refs_add appends "what\tname\n" to the growing list *out.
static void pnec_h5refs_add(char **out, const char *what, const char *name) {
	size_t old = *out ? strlen(*out) : 0;
	size_t n = old + strlen(what) + strlen(name) + 3;
	char *p = realloc(*out, n);
	if (p == NULL) return;
	if (old == 0) p[0] = 0;
	strcat(p, what); strcat(p, "\t"); strcat(p, name); strcat(p, "\n");
	*out = p;
}

// pnec_h5refs_dataset records the files a dataset's storage reads:
// external storage files and virtual dataset sources other than the file
// itself (".").
static void pnec_h5refs_dataset(hid_t ds, char **out) {
	hid_t dcpl = H5Dget_create_plist(ds);
	if (dcpl < 0) return;
	int n = H5Pget_external_count(dcpl);
	for (int i = 0; i < n; i++) {
		char name[4096] = {0};
		off_t off; hsize_t size;
		if (H5Pget_external(dcpl, (unsigned)i, sizeof name - 1, name, &off, &size) >= 0)
			pnec_h5refs_add(out, "external storage", name);
	}
	if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
		size_t count = 0;
		if (H5Pget_virtual_count(dcpl, &count) >= 0) {
			for (size_t i = 0; i < count; i++) {
				char name[4096] = {0};
				if (H5Pget_virtual_filename(dcpl, i, name, sizeof name - 1) >= 0 && strcmp(name, ".") != 0)
					pnec_h5refs_add(out, "a virtual dataset's source", name);
			}
		}
	}
	H5Pclose(dcpl);
}

static herr_t pnec_h5refs_link(hid_t g, const char *name, const H5L_info_t *info, void *data) {
	char **out = data;
	if (info->type == H5L_TYPE_EXTERNAL) {
		char val[4096] = {0};
		const char *file = NULL, *obj = NULL;
		if (H5Lget_val(g, name, val, sizeof val - 1, H5P_DEFAULT) >= 0 &&
		    H5Lunpack_elink_val(val, sizeof val - 1, NULL, &file, &obj) >= 0 && file != NULL)
			pnec_h5refs_add(out, "an external link", file);
		else
			pnec_h5refs_add(out, "an external link", name);
		return 0;
	}
	if (info->type != H5L_TYPE_HARD) return 0;
	hid_t o = H5Oopen(g, name, H5P_DEFAULT);
	if (o < 0) return 0;
	if (H5Iget_type(o) == H5I_DATASET) pnec_h5refs_dataset(o, out);
	H5Oclose(o);
	return 0;
}

// pnec_h5refs lists what the HDF5 file path reads besides itself, one
// "what\tname" a line; *status is 0 for such a list, 1 when path is not
// an HDF5 file, -1 when it cannot be read as one.
static char *pnec_h5refs(const char *path, int *status) {
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	htri_t is = H5Fis_hdf5(path);
	if (is <= 0) { *status = is == 0 ? 1 : -1; return NULL; }
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0) { *status = -1; return NULL; }
	char *out = NULL;
	*status = H5Lvisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, pnec_h5refs_link, &out) < 0 ? -1 : 0;
	H5Fclose(f);
	return out;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// HDF5Reference is a file an HDF5 (or netCDF-4) file makes the HDF5
// library read besides itself, which GDAL's file list does not show.
type HDF5Reference struct {
	What string // "external storage", "a virtual dataset's source", "an external link"
	Name string // the file as the HDF5 file names it
}

// HDF5References lists the files the local HDF5 file path reads through
// the HDF5 library itself: datasets' external storage, virtual datasets'
// sources in other files and external links, found by walking every link
// of the file with the HDF5 library (no data is read). A file that is not
// HDF5, or not a regular file (CheckRegular), has none; an HDF5 file that
// cannot be walked is an error.
func HDF5References(path string) ([]HDF5Reference, error) {
	if CheckRegular(path) != nil {
		return nil, nil
	}
	defer onQuietThread()()
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var status C.int
	list := C.pnec_h5refs(cp, &status)
	if list != nil {
		defer C.free(unsafe.Pointer(list))
	}
	switch status {
	case 1:
		return nil, nil
	case -1:
		return nil, fmt.Errorf("%s: the HDF5 library cannot list what it reads", path)
	}
	var out []HDF5Reference
	for _, line := range strings.Split(C.GoString(list), "\n") {
		if what, name, ok := strings.Cut(line, "\t"); ok {
			out = append(out, HDF5Reference{What: what, Name: name})
		}
	}
	return out, nil
}

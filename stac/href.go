package stac

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

// Hrefs: how Items name files and URLs, and how GDAL reads them.

// MaxDocumentBytes caps one STAC document read into memory (64 MiB).
const MaxDocumentBytes = 64 << 20

// ReadDocument reads a STAC document of at most MaxDocumentBytes.
func ReadDocument(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDocumentBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxDocumentBytes)
	}
	return b, nil
}

// IsURL reports whether s is an http(s) URL.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// HasScheme reports whether href starts with a URL scheme (two letters or more, so
// that a Windows drive is none).
func HasScheme(href string) bool {
	u, err := url.Parse(href)
	return err == nil && len(u.Scheme) > 1
}

// GDALName maps an href to the GDAL dataset name that reads it.
func GDALName(target string) string {
	for prefix, vsi := range map[string]string{
		"http://": "/vsicurl/http://", "https://": "/vsicurl/https://",
		"s3://": "/vsis3/", "gs://": "/vsigs/", "az://": "/vsiaz/", "abfs://": "/vsiadls/",
	} {
		if strings.HasPrefix(target, prefix) {
			return vsi + strings.TrimPrefix(target, prefix)
		}
	}
	return target
}

// PortableHref writes a local target relative to base (the Item's
// directory) when it lies under root (the Collection's or the Item's
// directory), so that the tree can be moved or served as it is; a local
// target elsewhere stays an absolute path (a relative one would climb out
// of the tree and break when either moves). URLs and /vsi paths stay as
// they are.
func PortableHref(target, root, base string) string {
	if IsURL(target) || strings.HasPrefix(target, "/vsi") || strings.Contains(target, "://") {
		return target
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return filepath.ToSlash(target)
	}
	ra, err1 := filepath.Abs(root)
	ba, err2 := filepath.Abs(base)
	if err1 == nil && err2 == nil {
		if r, err := filepath.Rel(ra, abs); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			if rel, err := filepath.Rel(ba, abs); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(abs)
}

// selfHref is the absolute URL of the Item at itemPath when a base URL
// (the public location of root) is given and the Item lies under root;
// "" otherwise: STAC wants self absolute, and a relative one misleads.
func selfHref(baseURL, itemPath, root string) string {
	if baseURL == "" {
		return ""
	}
	rel := PortableHref(itemPath, root, root)
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "../") {
		return ""
	}
	return strings.TrimSuffix(baseURL, "/") + "/" + rel
}

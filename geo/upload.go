package geo

// Upload copies the local file from to the GDAL virtual path to (any
// writable /vsi file system: /vsimem/, /vsis3/, /vsigs/, /vsiaz/ ...); on
// object stores the object appears only when complete. Used to publish
// files a STAC task payload's path_template names.
func Upload(from, to string) error {
	register()
	return vsiUpload(from, to)
}

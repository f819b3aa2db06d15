package geo

/*
#include <stdlib.h>
#include <cpl_conv.h>
#include <gdal.h>
*/
import "C"

import "unsafe"

// Knobs are GDAL's process-wide settings, as plain setters for pnec's
// resource policy (internal/resources, which decides and applies them:
// GDAL_NUM_THREADS when the process starts, the block cache's maximum per
// run). geo is the one package that links GDAL, so the policy turns them
// through this type; nothing else calls its setters.
type Knobs struct{}

// ConfigValue is the configuration option key's value ("" when unset).
func (Knobs) ConfigValue(key string) string { return ConfigValue(key) }

// SetConfigValue sets the configuration option key process-wide.
func (Knobs) SetConfigValue(key, value string) { setConfigValue(key, value) }

// BlockCacheMaxBytes is the block cache's maximum now, bytes.
func (Knobs) BlockCacheMaxBytes() int64 { return int64(C.GDALGetCacheMax64()) }

// SetBlockCacheMaxBytes sets the block cache's maximum, bytes.
func (Knobs) SetBlockCacheMaxBytes(n int64) { C.GDALSetCacheMax64(C.GIntBig(n)) }

// setConfigValue sets a configuration option process-wide
// (CPLSetConfigOption); an empty value unsets it.
func setConfigValue(key, value string) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var cv *C.char
	if value != "" {
		cv = C.CString(value)
		defer C.free(unsafe.Pointer(cv))
	}
	C.CPLSetConfigOption(ck, cv)
}

// Package archtest holds the module's architecture tests: which package
// may import which (TestImportsOneWay), and that geo names no sensor
// (TestGeoNamesNoSensor). It has no code of its own.
package archtest

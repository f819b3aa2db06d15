// Package sensors holds the readers of imaging spectrometers' deliveries
// behind one interface (Sensor) and their registry. Each sensor is one
// file: it recognises its deliveries, opens its cube or completes the
// raster GDAL opened, and gives its band set, radiometry, quality masks and
// acquisition time as plain data; geo, the one door to GDAL, opens and
// reads the files. Loading this package installs the registry into
// geo.Open (geo.SetProductHooks), so every command and library that opens
// scenes recognises every registered sensor: processor, evaluation and
// pipelines import it (a blank import each), and so every command does.
//
// AVIRIS-3 reads here (aviris3.go). EnMAP, EMIT, PRISMA, Tanager, DESIS
// and AVIRIS-NG are still read inside geo (delivery.go lists them) and
// move here the same way; docs/architecture.md says what a new sensor
// needs.
package sensors

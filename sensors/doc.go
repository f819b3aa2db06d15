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
// Every sensor pnec reads is here, a file each: AVIRIS-3 (aviris3.go),
// AVIRIS-NG (avirisng.go), DESIS (desis.go), EMIT (emit.go), EnMAP
// (enmap.go), PRISMA (prisma.go) and Tanager (tanager.go); helpers.go
// holds what several share. geo names none of them. docs/architecture.md
// says what a new sensor needs.
package sensors

// Package stac writes pnec's STAC documents: the Item of each product
// (classification, raster, projection, processing and file extensions, with
// what the product was made from: BuildItem, item.go), the model's Item with
// the Machine Learning Model extension (BuildModelItem, WriteModelItem,
// mlm.go), the Collection that gathers product Items (AddToCollection,
// collection.go), and STAC task payloads in and out (Payload, payload.go),
// plus how Items name files (PortableHref, href.go).
//
// It holds documents, not the batch: pipelines decides which scenes to do
// and calls this package to describe them; pnec train and pnec model-item
// call it to describe a model. It imports geo (a product's georeference and
// file names) and model (the model an MLM Item describes), never pipelines
// or processor; the external github.com/planetlabs/go-stac is imported as
// gostac.
package stac

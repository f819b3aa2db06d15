// Package archtest holds the module's architecture tests: which package
// may import which (TestImportsOneWay). It has no code of its own.
package archtest

// Package samefile tells whether two paths name one file, so that a command
// can refuse, before any work, an output that would overwrite one of its
// inputs: through the same name, a symbolic link, a hard link, or a
// directory reached two ways.
package samefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutputIsInput is wrapped by Conflict errors.
var ErrOutputIsInput = errors.New("an output is one of the inputs")

// Conflict is an output that is one of the inputs. errors.Is(err,
// ErrOutputIsInput) holds for it.
type Conflict struct {
	Output, Input         string // the paths as given
	OutputRole, InputRole string // what each is, in words: "the product", "the scene", ...
}

func (e *Conflict) Error() string {
	how := "the same file"
	if filepath.Clean(e.Output) == filepath.Clean(e.Input) {
		how = "the same path"
	}
	return fmt.Sprintf("%s %s is %s %s (%s): writing it would destroy that input", e.OutputRole, e.Output, e.InputRole, e.Input, how)
}

// Is makes errors.Is(err, ErrOutputIsInput) true.
func (e *Conflict) Is(target error) bool { return target == ErrOutputIsInput }

// Local reports whether name is a path of the local file system, not a GDAL
// virtual path (/vsicurl/..., /vsimem/...), a URL or a driver-prefixed
// dataset name (HDF5:"f.h5"://cube, NETCDF:...). Only local paths are
// compared.
func Local(name string) bool {
	switch {
	case name == "", strings.HasPrefix(name, "/vsi"), strings.Contains(name, "://"):
		return false
	case strings.Contains(name, ":"):
		// A driver prefix, unless a file of that very name exists.
		_, err := os.Lstat(name)
		return err == nil
	}
	return true
}

// Key identifies the file name names: its device and inode when it exists
// (symbolic links followed, so every link and hard link to one file has one
// key), else its absolute path with the symbolic links of its existing
// ancestors resolved (two names of a file still to be written). "" for a
// name that is not Local.
func Key(name string) string {
	var k keyer
	return k.key(name)
}

// keyer is Key for many names at once: the working directory read once and
// each folder's resolution (the symbolic links of its path, component by
// component) made once, for the names that do not exist yet. A batch checks
// about eight such names a scene (its product's companion files) in one
// output folder, and each walked that folder's whole path again (a payload
// of 10,000 scenes resolved 80,000 names before work).
type keyer struct {
	wd   string
	dirs map[string]string // absolute folder -> resolveAncestors of it
}

func (k *keyer) key(name string) string {
	if !Local(name) {
		return ""
	}
	if st, err := os.Stat(name); err == nil {
		if s, ok := st.Sys().(*syscall.Stat_t); ok {
			return fmt.Sprintf("inode %d:%d", s.Dev, s.Ino)
		}
	}
	abs := filepath.Clean(name)
	if !filepath.IsAbs(abs) {
		if k.wd == "" {
			wd, err := os.Getwd()
			if err != nil {
				return "path " + Resolve(name)
			}
			k.wd = wd
		}
		abs = filepath.Join(k.wd, name)
	}
	if _, err := os.Lstat(abs); err == nil {
		// A symbolic link to nothing (or a file that appeared since
		// the Stat): resolve follows it.
		return "path " + Resolve(name)
	}
	// Nothing at abs: what resolve makes of it is its folder's
	// resolution with its name.
	dir := filepath.Dir(abs)
	r, ok := k.dirs[dir]
	if !ok {
		r = resolveAncestors(dir)
		if k.dirs == nil {
			k.dirs = map[string]string{}
		}
		k.dirs[dir] = r
	}
	return "path " + filepath.Join(r, filepath.Base(abs))
}

// Resolve is name made absolute and clean, with the symbolic links of its
// deepest existing ancestor (itself when it exists) resolved: where a read
// or write of name lands.
func Resolve(name string) string { return resolve(name, 0) }

// maxLinks bounds the symbolic links resolve follows (as the kernel does).
const maxLinks = 40

func resolve(name string, links int) string {
	abs, err := filepath.Abs(name)
	if err != nil {
		return filepath.Clean(name)
	}
	// A symbolic link to a file that does not exist yet names that file.
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 && links < maxLinks {
		if _, err := os.Stat(abs); err != nil {
			if target, err := os.Readlink(abs); err == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(abs), target)
				}
				return resolve(target, links+1)
			}
		}
	}
	return resolveAncestors(abs)
}

// resolveAncestors is the absolute, clean path abs with the symbolic links
// of its deepest existing ancestor (itself when it exists) resolved.
func resolveAncestors(abs string) string {
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if p == filepath.Dir(p) {
			return abs
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// Same reports whether a and b name one local file (see Key).
func Same(a, b string) bool {
	ka := Key(a)
	return ka != "" && ka == Key(b)
}

// Named is a path and what it is, in words ("the scene", "--labels").
type Named struct {
	Path, Role string
}

// Set is a set of inputs, looked up by file identity.
type Set struct {
	byKey map[string]Named
}

// Add records input paths; names that are not Local are left out.
func (s *Set) Add(in ...Named) {
	if s.byKey == nil {
		s.byKey = map[string]Named{}
	}
	var ks keyer
	for _, n := range in {
		if k := ks.key(n.Path); k != "" {
			if _, ok := s.byKey[k]; !ok {
				s.byKey[k] = n
			}
		}
	}
}

// Check returns a *Conflict for the first output that is one of the
// inputs, else nil.
func (s *Set) Check(outputs ...Named) error {
	var ks keyer
	for _, o := range outputs {
		k := ks.key(o.Path)
		if k == "" {
			continue
		}
		if in, ok := s.byKey[k]; ok {
			return &Conflict{Output: o.Path, Input: in.Path, OutputRole: o.Role, InputRole: in.Role}
		}
	}
	return nil
}

// Check is a Set of inputs checked against outputs: a *Conflict for the
// first output that is one of the inputs, else nil.
func Check(outputs, inputs []Named) error {
	var s Set
	s.Add(inputs...)
	return s.Check(outputs...)
}

// Has reports whether name is one of the inputs (through any name or link).
// A nil Set has none.
func (s *Set) Has(name string) bool {
	if s == nil {
		return false
	}
	k := Key(name)
	_, ok := s.byKey[k]
	return k != "" && ok
}

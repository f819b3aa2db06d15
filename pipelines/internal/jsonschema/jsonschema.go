// Package jsonschema validates JSON documents against the subset of JSON
// Schema draft-07 that the STAC core and extension schemas use, loading
// every schema from a local directory that mirrors the schema URLs
// (testdata/stac/schemas/<host>/<path>), so validation never needs the network.
//
// Supported keywords: $ref (URL and JSON-pointer fragments), $id, type, enum,
// const, properties, patternProperties, additionalProperties, required,
// minProperties, maxProperties, items (one schema or a tuple), minItems,
// maxItems, uniqueItems, contains, minLength, maxLength, pattern, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, allOf, anyOf, oneOf, not,
// if/then/else and format "date-time". Other keywords (title, examples, ...)
// are annotations and ignored. Patterns use Go's RE2 syntax plus the one
// lookahead form the STAC extension schemas use, `^(?!prefix)`.
package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrInvalid is wrapped by the error Validate returns for a document that does not match.
var ErrInvalid = errors.New("jsonschema: document does not match the schema")

// Store loads schemas from Dir, where the schema published at
// https://HOST/PATH is the file Dir/HOST/PATH.
type Store struct {
	Dir string

	mu   sync.Mutex
	docs map[string]any // by URL without fragment
	res  map[string]func(string) bool
}

// NewStore returns a store reading schemas under dir.
func NewStore(dir string) *Store {
	return &Store{Dir: dir, docs: map[string]any{}, res: map[string]func(string) bool{}}
}

// Validate checks the JSON document data against the schema at schemaURL.
// It returns nil when the document matches, an error wrapping ErrInvalid
// listing the failures (with JSON pointers into the document) when it does
// not, and other errors when a schema cannot be loaded.
func (s *Store) Validate(data []byte, schemaURL string) error {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("jsonschema: decode document: %w", err)
	}
	base, node, err := s.resolve("", schemaURL)
	if err != nil {
		return err
	}
	v := &validation{store: s}
	v.validate(base, node, doc, "")
	if v.loadErr != nil {
		return v.loadErr
	}
	if len(v.errs) > 0 {
		sort.Strings(v.errs)
		return fmt.Errorf("%w: %s (schema %s)", ErrInvalid, strings.Join(v.errs, "; "), schemaURL)
	}
	return nil
}

func (s *Store) load(docURL string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.docs[docURL]; ok {
		return d, nil
	}
	u, err := url.Parse(docURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("jsonschema: schema URL %q is not absolute", docURL)
	}
	p := filepath.Join(s.Dir, u.Host, filepath.FromSlash(u.Path))
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: schema %s is not shipped: %w", docURL, err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("jsonschema: decode schema %s: %w", p, err)
	}
	s.docs[docURL] = d
	return d, nil
}

// resolve finds the schema node that ref (relative to base) names, and the
// base URL that node's own references are relative to.
func (s *Store) resolve(base, ref string) (string, any, error) {
	target := ref
	if base != "" {
		b, err := url.Parse(base)
		if err != nil {
			return "", nil, fmt.Errorf("jsonschema: base %q: %w", base, err)
		}
		r, err := url.Parse(ref)
		if err != nil {
			return "", nil, fmt.Errorf("jsonschema: $ref %q: %w", ref, err)
		}
		target = b.ResolveReference(r).String()
	}
	docURL, frag, _ := strings.Cut(target, "#")
	doc, err := s.load(docURL)
	if err != nil {
		return "", nil, err
	}
	node := doc
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := node.(map[string]any)
			if !ok {
				return "", nil, fmt.Errorf("jsonschema: $ref %s: no %q", target, tok)
			}
			if node, ok = m[tok]; !ok {
				return "", nil, fmt.Errorf("jsonschema: $ref %s: no %q", target, tok)
			}
		}
	}
	return docURL, node, nil
}

// regexp compiles a schema pattern once; see the package doc for the lookahead form.
func (s *Store) regexp(pattern string) (func(string) bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.res[pattern]; ok {
		return f, nil
	}
	var f func(string) bool
	if m := negPrefix.FindStringSubmatch(pattern); m != nil {
		prefix := m[1]
		f = func(x string) bool { return !strings.HasPrefix(x, prefix) }
	} else {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("jsonschema: pattern %q: %w", pattern, err)
		}
		f = re.MatchString
	}
	s.res[pattern] = f
	return f, nil
}

var negPrefix = regexp.MustCompile(`^\^\(\?!([A-Za-z0-9_:.-]+)\)$`)

type validation struct {
	store   *Store
	errs    []string
	loadErr error
}

func (v *validation) fail(path, format string, args ...any) {
	if path == "" {
		path = "/"
	}
	v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
}

// sub validates inst against node in a scratch validation and reports whether it matched.
func (v *validation) sub(base string, node, inst any, path string) (bool, []string) {
	w := &validation{store: v.store}
	w.validate(base, node, inst, path)
	if w.loadErr != nil && v.loadErr == nil {
		v.loadErr = w.loadErr
	}
	return len(w.errs) == 0, w.errs
}

func typeOf(x any) string {
	switch t := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if t == math.Trunc(t) && !math.IsInf(t, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

func typeMatches(want, got string) bool {
	return want == got || (want == "number" && got == "integer")
}

func num(x any) (float64, bool) { f, ok := x.(float64); return f, ok }

func (v *validation) validate(base string, node, inst any, path string) {
	if v.loadErr != nil {
		return
	}
	switch n := node.(type) {
	case bool:
		if !n {
			v.fail(path, "no value is allowed here")
		}
		return
	case map[string]any:
		v.object(base, n, inst, path)
	default:
		v.loadErr = fmt.Errorf("jsonschema: schema node at %s in %s is a %T", path, base, node)
	}
}

func (v *validation) object(base string, n map[string]any, inst any, path string) {
	if ref, ok := n["$ref"].(string); ok {
		// draft-07: siblings of $ref are ignored.
		b, target, err := v.store.resolve(base, ref)
		if err != nil {
			v.loadErr = fmt.Errorf("at %s: %w", path, err)
			return
		}
		v.validate(b, target, inst, path)
		return
	}
	if t, ok := n["type"]; ok {
		got := typeOf(inst)
		var wants []string
		switch tt := t.(type) {
		case string:
			wants = []string{tt}
		case []any:
			for _, w := range tt {
				if s, ok := w.(string); ok {
					wants = append(wants, s)
				}
			}
		}
		match := false
		for _, w := range wants {
			match = match || typeMatches(w, got)
		}
		if !match {
			v.fail(path, "got type %s, want %s", got, strings.Join(wants, " or "))
			return
		}
	}
	if c, ok := n["const"]; ok && !reflect.DeepEqual(c, inst) {
		v.fail(path, "got %v, want the constant %v", short(inst), short(c))
	}
	if e, ok := n["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || reflect.DeepEqual(x, inst)
		}
		if !found {
			v.fail(path, "got %v, want one of %v", short(inst), short(e))
		}
	}
	v.combinators(base, n, inst, path)
	switch x := inst.(type) {
	case map[string]any:
		v.objectKeywords(base, n, x, path)
	case []any:
		v.arrayKeywords(base, n, x, path)
	case string:
		v.stringKeywords(n, x, path)
	case float64:
		v.numberKeywords(n, x, path)
	}
}

func (v *validation) combinators(base string, n map[string]any, inst any, path string) {
	if all, ok := n["allOf"].([]any); ok {
		for _, s := range all {
			v.validate(base, s, inst, path)
		}
	}
	if anyOf, ok := n["anyOf"].([]any); ok {
		var why []string
		matched := false
		for _, s := range anyOf {
			ok, errs := v.sub(base, s, inst, path)
			if ok {
				matched = true
				break
			}
			why = append(why, errs...)
		}
		if !matched {
			v.fail(path, "matches none of anyOf [%s]", strings.Join(why, " | "))
		}
	}
	if oneOf, ok := n["oneOf"].([]any); ok {
		count := 0
		var why []string
		for _, s := range oneOf {
			ok, errs := v.sub(base, s, inst, path)
			if ok {
				count++
			} else {
				why = append(why, errs...)
			}
		}
		if count != 1 {
			v.fail(path, "matches %d of oneOf, want exactly 1 [%s]", count, strings.Join(why, " | "))
		}
	}
	if not, ok := n["not"]; ok {
		if ok, _ := v.sub(base, not, inst, path); ok {
			v.fail(path, "matches a schema it must not match")
		}
	}
	if cond, ok := n["if"]; ok {
		if ok, _ := v.sub(base, cond, inst, path); ok {
			if t, ok := n["then"]; ok {
				v.validate(base, t, inst, path)
			}
		} else if e, ok := n["else"]; ok {
			v.validate(base, e, inst, path)
		}
	}
}

func (v *validation) objectKeywords(base string, n map[string]any, x map[string]any, path string) {
	if req, ok := n["required"].([]any); ok {
		for _, r := range req {
			if k, ok := r.(string); ok {
				if _, has := x[k]; !has {
					v.fail(path, "missing required property %q", k)
				}
			}
		}
	}
	if m, ok := num(n["minProperties"]); ok && float64(len(x)) < m {
		v.fail(path, "got %d properties, want at least %v", len(x), m)
	}
	if m, ok := num(n["maxProperties"]); ok && float64(len(x)) > m {
		v.fail(path, "got %d properties, want at most %v", len(x), m)
	}
	props, _ := n["properties"].(map[string]any)
	patProps, _ := n["patternProperties"].(map[string]any)
	addl, hasAddl := n["additionalProperties"]
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := x[k]
		p := path + "/" + k
		matched := false
		if s, ok := props[k]; ok {
			matched = true
			v.validate(base, s, val, p)
		}
		for pat, s := range patProps {
			f, err := v.store.regexp(pat)
			if err != nil {
				v.loadErr = err
				return
			}
			if f(k) {
				matched = true
				v.validate(base, s, val, p)
			}
		}
		if !matched && hasAddl {
			if b, ok := addl.(bool); ok && !b {
				v.fail(p, "property is not allowed here")
			} else if !ok {
				v.validate(base, addl, val, p)
			}
		}
	}
}

func (v *validation) arrayKeywords(base string, n map[string]any, x []any, path string) {
	if m, ok := num(n["minItems"]); ok && float64(len(x)) < m {
		v.fail(path, "got %d items, want at least %v", len(x), m)
	}
	if m, ok := num(n["maxItems"]); ok && float64(len(x)) > m {
		v.fail(path, "got %d items, want at most %v", len(x), m)
	}
	if u, ok := n["uniqueItems"].(bool); ok && u {
		for i := range x {
			for j := i + 1; j < len(x); j++ {
				if reflect.DeepEqual(x[i], x[j]) {
					v.fail(path, "items %d and %d are equal, want unique items", i, j)
				}
			}
		}
	}
	switch items := n["items"].(type) {
	case []any:
		for i := 0; i < len(items) && i < len(x); i++ {
			v.validate(base, items[i], x[i], fmt.Sprintf("%s/%d", path, i))
		}
	case nil:
	default:
		for i, e := range x {
			v.validate(base, items, e, fmt.Sprintf("%s/%d", path, i))
		}
	}
	if c, ok := n["contains"]; ok {
		found := false
		for i, e := range x {
			if ok, _ := v.sub(base, c, e, fmt.Sprintf("%s/%d", path, i)); ok {
				found = true
				break
			}
		}
		if !found {
			v.fail(path, "no item matches the contains schema")
		}
	}
}

func (v *validation) stringKeywords(n map[string]any, x string, path string) {
	length := float64(len([]rune(x)))
	if m, ok := num(n["minLength"]); ok && length < m {
		v.fail(path, "got length %v, want at least %v", length, m)
	}
	if m, ok := num(n["maxLength"]); ok && length > m {
		v.fail(path, "got length %v, want at most %v", length, m)
	}
	if pat, ok := n["pattern"].(string); ok {
		f, err := v.store.regexp(pat)
		if err != nil {
			v.loadErr = err
			return
		}
		if !f(x) {
			v.fail(path, "%q does not match pattern %q", x, pat)
		}
	}
	if f, _ := n["format"].(string); f == "date-time" {
		if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
			v.fail(path, "%q is not an RFC 3339 date-time", x)
		}
	}
}

func (v *validation) numberKeywords(n map[string]any, x float64, path string) {
	if m, ok := num(n["minimum"]); ok && x < m {
		v.fail(path, "got %v, want >= %v", x, m)
	}
	if m, ok := num(n["maximum"]); ok && x > m {
		v.fail(path, "got %v, want <= %v", x, m)
	}
	if m, ok := num(n["exclusiveMinimum"]); ok && x <= m {
		v.fail(path, "got %v, want > %v", x, m)
	}
	if m, ok := num(n["exclusiveMaximum"]); ok && x >= m {
		v.fail(path, "got %v, want < %v", x, m)
	}
}

func short(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

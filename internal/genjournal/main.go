// Command genjournal writes the trap listener's journal codec for the facts of a hit
// (trap/journalcodec_gen.go) from the Go types themselves, so a request fact is added in
// one place, detect.Observation, and go generate carries it into the journal: no codec to
// extend by hand, no test to remember.
//
// The record keeps each type's fields in declaration order and says how many it wrote, so
// a record journaled before a field was added reads back with that field zero. That holds
// only while fields are appended: the layout written so far is kept in
// trap/journallayout.txt, and genjournal refuses a field removed, renamed, moved or
// retyped there (records of the old layout could be waiting in a journal at upgrade).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"log"
	"maps"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
)

// roots are the types a record holds; the struct types their fields hold (a list of
// token uses, a struct of facts) are found from them. Each journaled type gets functions
// named after it (append<Name>, entryReader.<name>) and an index in the record's field
// counts: its place in journallayout.txt, a new type after every known one.
var roots = []reflect.Type{reflect.TypeFor[detect.Observation](), reflect.TypeFor[decoy.TokenRef]()}

type codec struct {
	Name string
	Type reflect.Type
}

// codecs is every journaled type in its index order (set by run).
var codecs []codec

// discover lists t and the struct types its fields hold, depth first.
func discover(t reflect.Type, seen map[reflect.Type]bool, out *[]reflect.Type) {
	if seen[t] {
		return
	}
	seen[t] = true
	*out = append(*out, t)
	for f := range t.Fields() {
		e := f.Type
		if e.Kind() == reflect.Slice {
			e = e.Elem()
		}
		if e.Kind() == reflect.Struct && e != timeType && e != addrType {
			discover(e, seen, out)
		}
	}
}

// order gives the types their indices: as in the layout so far, then new ones as found.
func order(types []reflect.Type, old []field) ([]codec, error) {
	byName := map[string]reflect.Type{}
	for _, t := range types {
		if o, dup := byName[t.Name()]; dup {
			return nil, fmt.Errorf("two journaled types are named %s (%s and %s)", t.Name(), o, t)
		}
		byName[t.Name()] = t
	}
	var cs []codec
	placed := map[string]bool{}
	for _, f := range old {
		if !placed[f.Type] {
			placed[f.Type] = true
			t, ok := byName[f.Type]
			if !ok {
				return nil, fmt.Errorf("the journal's record held a %s (journallayout.txt), which no journaled field holds now: "+
					"records of the earlier layout could not be read back", f.Type)
			}
			cs = append(cs, codec{f.Type, t})
		}
	}
	for _, t := range types {
		if !placed[t.Name()] {
			cs = append(cs, codec{t.Name(), t})
		}
	}
	return cs, nil
}

func main() {
	out := flag.String("out", "journalcodec_gen.go", "the Go file to write")
	layout := flag.String("layout", "journallayout.txt", "the layout so far, checked and extended")
	flag.Parse()
	if err := run(*out, *layout); err != nil {
		log.Fatal("genjournal: ", err)
	}
}

type field struct{ Type, Name, GoType string }

func run(out, layoutPath string) error {
	old, err := readLayout(layoutPath)
	if err != nil {
		return err
	}
	var types []reflect.Type
	seen := map[reflect.Type]bool{}
	for _, t := range roots {
		discover(t, seen, &types)
	}
	if codecs, err = order(types, old); err != nil {
		return err
	}
	var fields []field
	for _, c := range codecs {
		for f := range c.Type.Fields() {
			if !f.IsExported() {
				return fmt.Errorf("%s.%s: unexported fields cannot be journaled", c.Name, f.Name)
			}
			fields = append(fields, field{c.Name, f.Name, f.Type.String()})
		}
	}
	if err := appendOnly(old, fields); err != nil {
		return err
	}
	src, err := generate()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	return writeLayout(layoutPath, fields)
}

func readLayout(path string) ([]field, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var l []field
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := strings.Fields(line)
		if len(p) != 3 {
			return nil, fmt.Errorf("%s: %q is not \"Type Field GoType\"", path, line)
		}
		l = append(l, field{p[0], p[1], p[2]})
	}
	return l, s.Err()
}

// appendOnly says why cur cannot read records of old's layout, if it cannot.
func appendOnly(old, cur []field) error {
	for _, typ := range slices.Compact(typesOf(old)) {
		o, n := ofType(old, typ), ofType(cur, typ)
		for i, f := range o {
			if i >= len(n) || n[i] != f {
				return fmt.Errorf("%s.%s (%s) was field %d of the journal's record (journallayout.txt); "+
					"fields may only be added at the end of %s, since records of the earlier layout can wait "+
					"in a journal at upgrade. Put it back, or change the record's first byte in journalcodec.go "+
					"and read the old layout there", typ, f.Name, f.GoType, i+1, typ)
			}
		}
	}
	return nil
}

// typesOf is the type of each field of l, in order (repeated).
func typesOf(l []field) []string {
	ts := make([]string, len(l))
	for i, f := range l {
		ts[i] = f.Type
	}
	return ts
}

func ofType(l []field, typ string) []field {
	var o []field
	for _, f := range l {
		if f.Type == typ {
			o = append(o, f)
		}
	}
	return o
}

func writeLayout(path string, l []field) error {
	var b bytes.Buffer
	b.WriteString("# The journal's record layout (internal/genjournal writes and checks this file): the fields\n" +
		"# of each type in the order the codec writes them. Fields are only ever added at the end of\n" +
		"# their type: a record journaled by an earlier version must read back after an upgrade.\n")
	for _, f := range l {
		fmt.Fprintf(&b, "%s %s %s\n", f.Type, f.Name, f.GoType)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// A kind of field: how it is written and read.
type kind struct {
	append string // statement appending v to b (may set err)
	read   string // statement setting v from r
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	addrType    = reflect.TypeFor[netip.Addr]()
	headersType = reflect.TypeFor[map[string][]string]()
)

func kindOf(t reflect.Type) (kind, error) {
	switch {
	case t == timeType:
		return kind{"if b, err = appendTime(b, $); err != nil {\nreturn nil, err\n}", "$ = r.time()"}, nil
	case t == addrType:
		return kind{"if b, err = appendAddr(b, $); err != nil {\nreturn nil, err\n}", "$ = r.addr()"}, nil
	case t == headersType:
		return kind{"b = appendHeaders(b, $)", "$ = r.headers()"}, nil
	case t.Kind() == reflect.String && t.PkgPath() == "":
		return kind{"b = appendString(b, $)", "$ = r.string()"}, nil
	case t.Kind() == reflect.Bool && t.PkgPath() == "":
		return kind{"b = appendBool(b, $)", "$ = r.byte() == 1"}, nil
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return kind{"b = binary.AppendVarint(b, int64($))", fmt.Sprintf("$ = %s(r.varint())", t)}, nil
	case t.Kind() == reflect.Uint8:
		return kind{"b = append(b, byte($))", fmt.Sprintf("$ = %s(r.byte())", t)}, nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String && t.Elem().PkgPath() == "":
		return kind{"b = appendStrings(b, $)", "$ = r.strings()"}, nil
	case t.Kind() == reflect.Struct:
		if c := codecOf(t); c != "" {
			return kind{
				fmt.Sprintf("if b, err = append%s(b, &$); err != nil {\nreturn nil, err\n}", c),
				fmt.Sprintf("r.%s(&$)", lower(c)),
			}, nil
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if c := codecOf(t.Elem()); c != "" {
			return kind{
				fmt.Sprintf("if $ == nil {\nb = append(b, 0)\n} else {\nb = binary.AppendUvarint(b, uint64(len($))+1)\nfor i := range $ {\nif b, err = append%s(b, &$[i]); err != nil {\nreturn nil, err\n}\n}\n}", c),
				fmt.Sprintf("if c, isNil := r.count(); !isNil {\n$ = make(%s, c)\nfor i := range $ {\nr.%s(&$[i])\n}\n}", t, lower(c)),
			}, nil
		}
	}
	return kind{}, fmt.Errorf("no journal encoding for %s: add one to internal/genjournal", t)
}

// codecOf is the name of t's codec, "" if t is not journaled.
func codecOf(t reflect.Type) string {
	for _, c := range codecs {
		if c.Type == t {
			return c.Name
		}
	}
	return ""
}

func lower(s string) string { return strings.ToLower(s[:1]) + s[1:] }

func generate() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/genjournal; DO NOT EDIT.\n\npackage trap\n\n")
	imports := map[string]bool{"encoding/binary": true}
	for _, c := range codecs {
		imports[c.Type.PkgPath()] = true
		for f := range c.Type.Fields() { // named numbers are converted by name
			if k := f.Type.Kind(); f.Type.PkgPath() != "" && (k == reflect.Uint8 || k == reflect.Int || k == reflect.Int64) {
				imports[f.Type.PkgPath()] = true
			}
		}
	}
	b.WriteString("import (\n")
	paths := slices.Sorted(maps.Keys(imports))
	for _, std := range []bool{true, false} {
		for _, p := range paths {
			if !strings.Contains(strings.Split(p, "/")[0], ".") == std {
				fmt.Fprintf(&b, "%q\n", p)
			}
		}
		if std {
			b.WriteString("\n")
		}
	}
	b.WriteString(")\n\n")
	b.WriteString("// layout is how many fields of each journaled type (journalTypes) a record holds.\n")
	fmt.Fprintf(&b, "type layout [%d]int\n\n", len(codecs))
	b.WriteString("// journalTypes are the journaled types in the order of a record's field counts.\nvar journalTypes = [...]string{")
	for i, c := range codecs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", c.Name)
	}
	b.WriteString("}\n\n// layoutFields is how many fields of each type this version writes.\nvar layoutFields = layout{")
	for i, c := range codecs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", c.Type.NumField())
	}
	b.WriteString("}\n\n")
	for i, c := range codecs {
		t := c.Type
		fmt.Fprintf(&b, "func append%s(b []byte, s *%s) ([]byte, error) {\nvar err error\n", c.Name, t)
		for f := range t.Fields() {
			k, err := kindOf(f.Type)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", c.Name, f.Name, err)
			}
			b.WriteString(strings.ReplaceAll(k.append, "$", "s."+f.Name) + "\n")
		}
		b.WriteString("return b, err\n}\n\n")
		fmt.Fprintf(&b, "// %s reads the fields of a %s that the record says it holds; the rest stay zero.\n", lower(c.Name), c.Name)
		fmt.Fprintf(&b, "func (r *entryReader) %s(s *%s) {\nn := r.fields[%d]\n", lower(c.Name), t, i)
		for j, f := range slices.Collect(t.Fields()) {
			k, _ := kindOf(f.Type)
			fmt.Fprintf(&b, "if n <= %d {\nreturn\n}\n%s\n", j, strings.ReplaceAll(k.read, "$", "s."+f.Name))
		}
		b.WriteString("}\n\n")
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format: %w\n%s", err, b.Bytes())
	}
	return src, nil
}

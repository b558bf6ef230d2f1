// Package settings declares each setting of a command once: its flag name, environment
// variable (derived from the flag), default, help, validation, and its row of the README's
// configuration table. A package owns the settings of its own configuration and declares
// them into a Set; the command registers the Set's flags, parses them with ParseFlags and
// validates them with Set.Validate. internal/settingsdoc writes the README's tables from the
// same declarations (go generate), and a test fails when they differ.
package settings

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Set is the settings of one command, in the order the README lists them.
type Set struct {
	table string
	items []item // settings and rules, in declaration order (the order Validate reports in)
}

// item is a setting or a rule over several settings.
type item struct {
	setting *Setting
	rule    func() error
}

// Setting is one declared setting. Its methods add to the declaration.
type Setting struct {
	Name       string                 // flag name: --api-addr
	Help       string                 // the flag's usage, as -h shows it
	Table      string                 // the README table that lists it
	doc        string                 // README meaning (Markdown); empty: Help, capitalized
	defaultDoc string                 // README default; empty: the default in backticks, or "empty"
	defText    string                 // the default as the flag shows it ("" for none)
	reset      func()                 // stores the default in the destination
	register   func(fs *flag.FlagSet) // adds the flag, the destination's value as its default
	checks     []func() error
}

// Table starts a README table: the settings declared next are listed in it.
func (s *Set) Table(name string) { s.table = name }

// Rule adds a check over several settings, reported in declaration order.
func (s *Set) Rule(check func() error) { s.items = append(s.items, item{rule: check}) }

func (s *Set) add(st *Setting) *Setting {
	st.Table = s.table
	s.items = append(s.items, item{setting: st})
	return st
}

// Settings are the declared settings in order.
func (s *Set) Settings() []*Setting {
	var out []*Setting
	for _, it := range s.items {
		if it.setting != nil {
			out = append(out, it.setting)
		}
	}
	return out
}

// Defaults stores every setting's default in its destination.
func (s *Set) Defaults() {
	for _, st := range s.Settings() {
		st.reset()
	}
}

// Register adds every setting's flag to fs, with the destinations' values as defaults.
func (s *Set) Register(fs *flag.FlagSet) {
	for _, st := range s.Settings() {
		st.register(fs)
	}
}

// Validate checks every setting and rule, in declaration order, and joins what fails.
func (s *Set) Validate() error {
	var errs []error
	for _, it := range s.items {
		if it.rule != nil {
			errs = append(errs, it.rule())
			continue
		}
		for _, c := range it.setting.checks {
			errs = append(errs, c())
		}
	}
	return errors.Join(errs...)
}

// Env is the environment variable of the setting: --api-addr is FLYTRAP_API_ADDR.
func (st *Setting) Env() string { return EnvName(st.Name) }

// Doc sets the setting's meaning in the README (Markdown), when it says more than Help.
func (st *Setting) Doc(markdown string) *Setting {
	st.doc = markdown
	return st
}

// DefaultDoc sets how the README shows the default, when the value alone would not say it.
func (st *Setting) DefaultDoc(markdown string) *Setting {
	st.defaultDoc = markdown
	return st
}

// Check adds a validation: check returns the error, nil when the value is fine.
func (st *Setting) Check(check func() error) *Setting {
	st.checks = append(st.checks, check)
	return st
}

// Meaning is the setting's README meaning.
func (st *Setting) Meaning() string {
	if st.doc != "" {
		return st.doc
	}
	return strings.ToUpper(st.Help[:1]) + st.Help[1:]
}

// Default is the setting's README default.
func (st *Setting) Default() string {
	switch {
	case st.defaultDoc != "":
		return st.defaultDoc
	case st.defText == "":
		return "empty"
	}
	return "`" + st.defText + "`"
}

// Of is a declared setting of a value that has an order: bounds can be declared on it.
type Of[T cmp.Ordered] struct {
	*Setting
	dst *T
}

// Doc is Setting.Doc, keeping the type.
func (o Of[T]) Doc(markdown string) Of[T] { o.Setting.Doc(markdown); return o }

// DefaultDoc is Setting.DefaultDoc, keeping the type.
func (o Of[T]) DefaultDoc(markdown string) Of[T] { o.Setting.DefaultDoc(markdown); return o }

// Valid adds a validation: when ok is false, the error is "<flag>: <msg>".
func (o Of[T]) Valid(ok func(T) bool, msg string) Of[T] {
	o.Check(func() error {
		if ok(*o.dst) {
			return nil
		}
		return errors.New(o.Name + ": " + msg)
	})
	return o
}

// Min: "<flag>: must be at least <lo>".
func (o Of[T]) Min(lo T) Of[T] {
	return o.Valid(func(v T) bool { return v >= lo }, fmt.Sprintf("must be at least %v", lo))
}

// Between: "<flag>: must be between <lo> and <hi>".
func (o Of[T]) Between(lo, hi T) Of[T] {
	return o.Valid(func(v T) bool { return v >= lo && v <= hi }, fmt.Sprintf("must be between %v and %v", lo, hi))
}

func declare[T cmp.Ordered](s *Set, dst *T, name string, def T, help string, text string, reg func(fs *flag.FlagSet)) Of[T] {
	return Of[T]{Setting: s.add(&Setting{Name: name, Help: help, defText: text, reset: func() { *dst = def }, register: reg}), dst: dst}
}

// String declares a text setting.
func (s *Set) String(dst *string, name, def, help string) Of[string] {
	return declare(s, dst, name, def, help, def, func(fs *flag.FlagSet) { fs.StringVar(dst, name, *dst, help) })
}

// Int declares an integer setting.
func (s *Set) Int(dst *int, name string, def int, help string) Of[int] {
	return declare(s, dst, name, def, help, strconv.Itoa(def), func(fs *flag.FlagSet) { fs.IntVar(dst, name, *dst, help) })
}

// Int64 declares a 64-bit integer setting (byte counts).
func (s *Set) Int64(dst *int64, name string, def int64, help string) Of[int64] {
	return declare(s, dst, name, def, help, strconv.FormatInt(def, 10), func(fs *flag.FlagSet) { fs.Int64Var(dst, name, *dst, help) })
}

// Float64 declares a decimal setting (rates).
func (s *Set) Float64(dst *float64, name string, def float64, help string) Of[float64] {
	return declare(s, dst, name, def, help, strconv.FormatFloat(def, 'g', -1, 64), func(fs *flag.FlagSet) { fs.Float64Var(dst, name, *dst, help) })
}

// Duration declares a duration setting (10s, 2m, 1h30m).
func (s *Set) Duration(dst *time.Duration, name string, def time.Duration, help string) Of[time.Duration] {
	return declare(s, dst, name, def, help, def.String(), func(fs *flag.FlagSet) { fs.DurationVar(dst, name, *dst, help) })
}

// Bool declares a true/false setting.
func (s *Set) Bool(dst *bool, name string, def bool, help string) *Setting {
	return s.add(&Setting{Name: name, Help: help, defText: strconv.FormatBool(def), reset: func() { *dst = def },
		register: func(fs *flag.FlagSet) { fs.BoolVar(dst, name, *dst, help) }})
}

// Func declares a setting that set parses into its destination. def is the default as
// text, which Defaults parses with set, shown after the help as "(default …)"; an empty
// default is the destination's zero value, which Defaults leaves as it is. A default that
// does not parse is a programming error: Defaults panics.
func (s *Set) Func(name, def, help string, set func(string) error) *Setting {
	if def != "" {
		help += " (default " + def + ")"
	}
	return s.add(&Setting{Name: name, Help: help, defText: def,
		reset: func() {
			if def == "" {
				return
			}
			if err := set(def); err != nil {
				panic(fmt.Sprintf("settings: the default of --%s: %v", name, err))
			}
		},
		register: func(fs *flag.FlagSet) { fs.Func(name, help, set) }})
}

// Env reads an environment variable; tests replace it.
type Env func(string) string

// OSEnv is the process environment.
var OSEnv Env = os.Getenv

// EnvName is the environment variable of a flag: --api-addr is FLYTRAP_API_ADDR.
func EnvName(flagName string) string {
	return "FLYTRAP_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ParseFlags fills fs's flags from the environment (FLYTRAP_<FLAG>), then from args,
// which win. A variable that does not parse is an error naming it, never ignored.
func ParseFlags(fs *flag.FlagSet, args []string, env Env) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		f.Usage += " (" + name + ")"
		if v := env(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return fs.Parse(args)
}

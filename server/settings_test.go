package server

import (
	"bytes"
	"flag"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

// README.md's configuration tables are the declarations' (go generate writes them).
func TestReadmeSettings(t *testing.T) {
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	want, err := c.Settings().Splice(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Fatal("README.md's configuration tables differ from the settings declared in server/settings.go: run go generate ./server")
	}
}

// The defaults a flag shows are DefaultConfig's: parsing nothing changes nothing, and every
// serve flag is a declared setting.
func TestSettingsDefaults(t *testing.T) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Register(fs)
	if err := ParseFlags(fs, nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if def := DefaultConfig(); !reflect.DeepEqual(c, def) {
		t.Fatalf("parsing no flag changed the defaults:\n%+v\nwant\n%+v", c, def)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	declared := map[string]bool{}
	for _, st := range c.Settings().Settings() {
		if declared[st.Name] {
			t.Errorf("--%s is declared twice", st.Name)
		}
		declared[st.Name] = true
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !declared[f.Name] {
			t.Errorf("--%s is not declared", f.Name)
		}
	})
}

// One Set registers, parses and validates: the rules read the values parsed, not copies
// taken when they were declared.
func TestSettingsValidateParsedValues(t *testing.T) {
	var c Config
	s := c.Settings()
	s.Defaults()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	if err := ParseFlags(fs, []string{"--webhook-workers", "0", "--retention-batch", "0", "--jwks-url", "https://idp.example.com/jwks", "--hit-batch", "0"}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	err := s.Validate()
	for _, want := range []string{"webhook-workers", "retention-batch", "jwt issuer is required", "hit-queue and hit-batch"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
}

// Command settingsdoc writes the configuration tables of README.md from the declarations
// of the serve settings (server/settings.go), between the markers settings.Markers names.
// go generate runs it; server's TestReadmeSettings fails when README.md is not its output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/flytrap/flytrap/server"
)

func main() {
	readme := flag.String("readme", "README.md", "the document to write the tables into")
	flag.Parse()
	if err := run(*readme); err != nil {
		fmt.Fprintln(os.Stderr, "settingsdoc:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg server.Config
	out, err := cfg.Settings().Splice(doc)
	if err != nil || bytes.Equal(out, doc) {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

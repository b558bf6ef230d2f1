package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/flytrap/flytrap/server"
)

// version is the release's version, stamped by a release build:
//
//	go build -trimpath -ldflags "-X main.version=v1.2.0" ./cmd/flytrap
//
// Without it, flytrap version reports the module version go install recorded (or "devel").
var version string

// commit is the commit a build without version control information (-buildvcs=false, a
// source archive) was made from: -X main.commit=$(git rev-parse HEAD). The build's own vcs
// settings take precedence.
var commit string

// moduleVersion is the version flytrap reports.
func moduleVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// buildInfo is what flytrap version prints.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: moduleVersion(), Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

func versionCmd(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	fs := flag.NewFlagSet("flytrap version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "text", "output: text or json")
	c := commandNamed("version")
	fs.Usage = func() { c.writeHelp(fs) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version takes no arguments, got %q", fs.Args())
	}
	b := readBuildInfo()
	switch *out {
	case "json":
		return json.NewEncoder(stdout).Encode(b)
	case "text":
	default:
		return fmt.Errorf("-o: %q is not an output format (want text or json)", *out)
	}
	fmt.Fprintf(stdout, "flytrap %s\n", b.Version)
	if b.Commit != "" {
		mod := ""
		if b.Modified {
			mod = " (modified)"
		}
		fmt.Fprintln(stdout, strings.TrimSpace(fmt.Sprintf("commit  %s%s %s", b.Commit, mod, b.Time)))
	}
	fmt.Fprintf(stdout, "go      %s %s\n", b.Go, b.Platform)
	return nil
}

func commandNamed(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

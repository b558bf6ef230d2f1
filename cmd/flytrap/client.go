package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"

	"github.com/flytrap/flytrap/apiclient"
	"github.com/flytrap/flytrap/server"
)

// Exit codes of flytrap (docs/cli.md): what a script can tell apart without reading stderr.
const (
	exitFailure    = 1 // the API answered an error not listed below, or could not be reached
	exitUsage      = 2 // bad flags or arguments (and every error of the database commands)
	exitAuth       = 3 // 401 or 403: no key, a wrong key, or a key without the scope
	exitNotFound   = 4 // 404
	exitConflict   = 5 // 409, e.g. a path that an active trap already holds
	exitInvalid    = 6 // the API refused the input (400, 413, 422), or a trap file does not validate
	exitRateLimit  = 7 // 429
	exitGateFailed = 8 // flytrap gate: an unresolved session at or above --fail-on
)

// exitError is an error with its exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode is the status flytrap exits with after err.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitUsage
}

// apiFailure is the error of an API answer with status code and body: the API's own words.
func apiFailure(status int, body []byte) error {
	var e apiclient.Error
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	err := fmt.Errorf("API: %d %s: %s", status, http.StatusText(status), msg)
	code := exitFailure
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		code = exitAuth
	case http.StatusNotFound:
		code = exitNotFound
	case http.StatusConflict:
		code = exitConflict
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		code = exitInvalid
	case http.StatusTooManyRequests:
		code = exitRateLimit
	}
	return &exitError{code, err}
}

// unreachable wraps a transport error (no answer at all).
func unreachable(err error) error {
	return &exitError{exitFailure, fmt.Errorf("API: %w", err)}
}

// clientOpts are the flags every API client command takes.
type clientOpts struct {
	url, key, profile, output string
}

// profileFile is where flytrap reads profiles: $XDG_CONFIG_HOME/flytrap/config, else
// ~/.config/flytrap/config (docs/cli.md).
func profileFile(env server.Env) string {
	if d := env("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "flytrap", "config")
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".config", "flytrap", "config")
	}
	return ""
}

// profiles is the profile file: named profiles of a URL and an API key.
type profiles struct {
	Profiles map[string]struct {
		URL    string `yaml:"url"`
		APIKey string `yaml:"api_key"`
	} `yaml:"profiles"`
}

// register declares the flags; the variables give the defaults of the first three (only
// these: FLYTRAP_NAME does not set a trap's --name).
func (o *clientOpts) register(fs *flag.FlagSet, env server.Env) {
	fs.StringVar(&o.url, "url", env("FLYTRAP_URL"), "the service's API address, e.g. http://127.0.0.1:8080 (FLYTRAP_URL)")
	fs.StringVar(&o.key, "api-key", "", "the API key (ftk_…); prefer the variable to the flag (FLYTRAP_API_KEY)")
	if o.key == "" {
		o.key = env("FLYTRAP_API_KEY") // not as the flag's default: help would show it
	}
	fs.StringVar(&o.profile, "profile", env("FLYTRAP_PROFILE"), "a profile of the profile file (default: \"default\", when the file has it) (FLYTRAP_PROFILE)")
	fs.StringVar(&o.output, "o", "table", "output: table, json or ndjson (events list and tail: ecs too)")
}

// resolve fills the URL and key from the profile file where flags and variables left them
// empty, and checks the output format.
func (o *clientOpts) resolve(env server.Env) error {
	switch o.output {
	case "table", "json", "ndjson", "ecs":
	default:
		return fmt.Errorf("-o: %q is not an output format (want table, json, ndjson, or ecs for events)", o.output)
	}
	if o.url != "" && o.key != "" && o.profile == "" {
		return nil
	}
	path := profileFile(env)
	raw, err := os.ReadFile(path)
	switch {
	case err != nil && o.profile != "":
		return fmt.Errorf("profile %q: %w", o.profile, err)
	case err == nil:
		var p profiles
		if err := yaml.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := o.profile
		if name == "" {
			name = "default"
		}
		pr, ok := p.Profiles[name]
		if !ok && o.profile != "" {
			return fmt.Errorf("%s has no profile %q", path, name)
		}
		if o.url == "" {
			o.url = pr.URL
		}
		if o.key == "" {
			o.key = pr.APIKey
		}
	}
	if o.url == "" {
		return errors.New("no API address: set FLYTRAP_URL, --url or a profile (flytrap help api)")
	}
	if o.key == "" {
		return errors.New("no API key: set FLYTRAP_API_KEY, --api-key or a profile (flytrap help api)")
	}
	return nil
}

// client is the generated REST client, signed with the key, waiting out rate limits.
func (o *clientOpts) client(stderr io.Writer) (*apiclient.ClientWithResponses, error) {
	return apiclient.NewClientWithResponses(strings.TrimRight(o.url, "/"), apiclient.WithHTTPClient(patient{o.key, stderr}))
}

// Rate limits: a 429 is waited out this many times at most, each wait at most maxRateWait.
const (
	maxRateRetries = 8
	maxRateWait    = 30 * time.Second
)

// patient is the HTTP client under both generated clients: it signs each request with the
// key and, when the service answers 429, waits as its Retry-After says (saying so on
// stderr) and sends the request again, so that an apply of a thousand traps goes through
// the per-key rate limit instead of stopping halfway. A 429 is sent before the request is
// handled, so sending it again is safe (and a create carries its Idempotency-Key anyway).
type patient struct {
	key    string
	stderr io.Writer
}

func (p patient) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("Authorization", "Bearer "+p.key)
	r.Header.Set("User-Agent", "flytrap-cli/"+moduleVersion())
	for attempt := 0; ; attempt++ {
		resp, err := http.DefaultClient.Do(r)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || attempt == maxRateRetries || (r.Body != nil && r.GetBody == nil) {
			return resp, err
		}
		wait := time.Second
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
			wait = min(time.Duration(n)*time.Second, maxRateWait)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		fmt.Fprintf(p.stderr, "rate limited: waiting %s as Retry-After says\n", wait)
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-time.After(wait):
		}
		if r.GetBody != nil {
			if r.Body, err = r.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// apiCall is what a running client command is given.
type apiCall struct {
	opts           clientOpts
	api            *apiclient.ClientWithResponses
	args           []string // positional arguments
	stdout, stderr io.Writer
	env            server.Env
}

// apiCommand is a row of commands that talks to the API: it parses its flags (and
// FLYTRAP_URL, FLYTRAP_API_KEY…), takes nargs positional arguments named in the synopsis,
// and runs. flags declares its own flags and returns how it runs.
func apiCommand(name, synopsis string, summary []string, nargs int, flags func(fs *flag.FlagSet, c *apiCall) func(ctx context.Context) error) *command {
	c := &command{name: name, synopsis: synopsis, summary: summary, client: true}
	c.own = func(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
		fs := flag.NewFlagSet("flytrap "+name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.Usage = func() { c.writeHelp(fs) }
		call := &apiCall{stdout: stdout, stderr: stderr, env: env}
		call.opts.register(fs, env)
		run := flags(fs, call)
		// Positional arguments may come before the flags too (flytrap traps get trp_… -o json).
		var lead []string
		// A negative nargs is "at least -nargs" (sessions triage ID…).
		for len(args) > 0 && !strings.HasPrefix(args[0], "-") && (nargs < 0 || len(lead) < nargs) {
			lead, args = append(lead, args[0]), args[1:]
		}
		if err := fs.Parse(args); err != nil {
			return err
		}
		call.args = append(lead, fs.Args()...)
		if nargs >= 0 && len(call.args) != nargs || nargs < 0 && len(call.args) < -nargs {
			return fmt.Errorf("usage: flytrap %s", strings.Split(synopsis, "\n")[0])
		}
		if err := call.opts.resolve(env); err != nil {
			return err
		}
		var err error
		if call.api, err = call.opts.client(stderr); err != nil {
			return err
		}
		return run(ctx)
	}
	return c
}

// emit writes items as the output format asks: a table of cols (row gives a row's cells),
// one JSON array, or one JSON object a line.
func emit[T any](c *apiCall, items []T, cols []string, row func(T) []string) error {
	switch c.opts.output {
	case "json":
		if items == nil {
			items = []T{}
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	case "ecs":
		events, ok := any(items).([]apiclient.Event)
		if !ok {
			return &exitError{exitUsage, errors.New("-o ecs is an output of events list and events tail only")}
		}
		for _, e := range events {
			if err := writeECS(c, e); err != nil {
				return err
			}
		}
		return nil
	case "ndjson":
		enc := json.NewEncoder(c.stdout)
		for _, it := range items {
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, it := range items {
		cells := row(it)
		for i, s := range cells {
			cells[i] = cell(s)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell is s fit for a table cell: attacker-controlled text (user agents, paths) has its
// control characters and tabs escaped, and its format characters (bidirectional overrides,
// zero-width characters) and line separators too, which make a terminal show another text
// than the one recorded; it is cut at 60 characters.
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return '?'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	if s == "" {
		s = "-"
	}
	return s
}

// emitOne writes one item: JSON (json and ndjson alike) or a table of one row.
func emitOne[T any](c *apiCall, item T, cols []string, row func(T) []string) error {
	if c.opts.output != "table" {
		return json.NewEncoder(c.stdout).Encode(item)
	}
	return emit(c, []T{item}, cols, row)
}

// check turns a generated response (or the error that came instead) into an error unless
// its status is one of want.
func check(err error, resp any, want ...int) error {
	if err != nil {
		return unreachable(err)
	}
	status, body := statusBody(resp)
	for _, w := range want {
		if status == w {
			return nil
		}
	}
	return apiFailure(status, body)
}

func init() {
	commands = append(commands, &command{name: "version", synopsis: "version [-o json]",
		summary: []string{"the version, commit and Go version of this binary"}, own: versionCmd})
	commands = append(commands, clientCommands...)
	commands = append(commands, keyCommands...)
	commands = append(commands, fileCommands...)
}

// apiHelp is flytrap help api.
const apiHelp = `The API client's commands reach a running service over its REST API.

Where and as whom, first found wins:
  --url and --api-key, or FLYTRAP_URL and FLYTRAP_API_KEY;
  a profile of the profile file ($XDG_CONFIG_HOME/flytrap/config, else ~/.config/flytrap/config),
  chosen with --profile or FLYTRAP_PROFILE (default: "default"):

    profiles:
      default:
        url: http://127.0.0.1:8080
        api_key: ftk_…

Output (-o): table (default), json (one array or object), ndjson (one object a line).
Tables and data go to stdout; progress, hints and errors to stderr.

Exit codes:
  0  success
  1  the API answered another error, or could not be reached
  2  usage: bad flags or arguments
  3  authentication or permission (401, 403)
  4  not found (404)
  5  conflict (409), e.g. a path another active trap holds
  6  invalid input (400, 413, 422), or a trap file that does not validate
  7  rate limited (429)
`

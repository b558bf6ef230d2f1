package settings

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

type conf struct {
	Name  string
	Count int
	Wait  time.Duration
	On    bool
	Tags  []string
}

func (c *conf) settings() *Set {
	s := &Set{}
	s.Table("main")
	s.String(&c.Name, "name", "flytrap", "the name").Valid(func(v string) bool { return v != "" }, "must not be empty")
	s.Int(&c.Count, "count", 3, "how many").Between(1, 9).DefaultDoc("`3` (three)")
	s.Duration(&c.Wait, "wait", time.Second, "how long").Min(10 * time.Millisecond)
	s.Rule(func() error {
		if c.Count > 5 && c.Wait > time.Minute {
			return errors.New("count and wait: not both large")
		}
		return nil
	})
	s.Table("more")
	s.Bool(&c.On, "on", true, "whether it is on")
	s.Func("tags", "a,b", "comma-separated tags", func(v string) error {
		c.Tags = strings.Split(v, ",")
		return nil
	}).Doc("Comma-separated **tags**")
	return s
}

func parse(t *testing.T, args []string, env map[string]string) (conf, error) {
	t.Helper()
	var c conf
	s := c.settings()
	s.Defaults()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	if err := ParseFlags(fs, args, func(k string) string { return env[k] }); err != nil {
		return c, err
	}
	return c, s.Validate()
}

func TestDefaultsFlagsAndEnvironment(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil || c.Name != "flytrap" || c.Count != 3 || c.Wait != time.Second || !c.On || strings.Join(c.Tags, "|") != "a|b" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = parse(t, []string{"--count", "4", "--on=false"}, map[string]string{"FLYTRAP_COUNT": "7", "FLYTRAP_WAIT": "2s", "FLYTRAP_TAGS": "x"})
	if err != nil || c.Count != 4 || c.Wait != 2*time.Second || c.On || strings.Join(c.Tags, "|") != "x" {
		t.Fatalf("the flag wins over the variable, the variable over the default: %+v %v", c, err)
	}
	if _, err := parse(t, nil, map[string]string{"FLYTRAP_COUNT": "many"}); err == nil || !strings.Contains(err.Error(), `FLYTRAP_COUNT="many"`) {
		t.Fatalf("a variable that does not parse: %v", err)
	}
}

func TestValidateInDeclarationOrder(t *testing.T) {
	_, err := parse(t, []string{"--name", "", "--count", "0", "--wait", "1ms"}, nil)
	want := "name: must not be empty\ncount: must be between 1 and 9\nwait: must be at least 10ms"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if _, err := parse(t, []string{"--count", "6", "--wait", "2m"}, nil); err == nil || err.Error() != "count and wait: not both large" {
		t.Fatalf("rule: %v", err)
	}
}

func TestMarkdownAndSplice(t *testing.T) {
	var c conf
	s := c.settings()
	if got, want := s.Markdown("main"), "| Flag | Environment variable | Default | Meaning |\n|---|---|---|---|\n"+
		"| `--name` | `FLYTRAP_NAME` | `flytrap` | The name |\n"+
		"| `--count` | `FLYTRAP_COUNT` | `3` (three) | How many |\n"+
		"| `--wait` | `FLYTRAP_WAIT` | `1s` | How long |\n"; got != want {
		t.Fatalf("main table:\n%s\nwant:\n%s", got, want)
	}
	b1, e1 := Markers("main")
	b2, e2 := Markers("more")
	doc := "intro\n" + b1 + "stale\n" + e1 + "middle\n" + b2 + e2 + "end\n"
	out, err := s.Splice([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n" + b1 + s.Markdown("main") + e1 + "middle\n" + b2 +
		"| Flag | Environment variable | Default | Meaning |\n|---|---|---|---|\n" +
		"| `--on` | `FLYTRAP_ON` | `true` | Whether it is on |\n" +
		"| `--tags` | `FLYTRAP_TAGS` | `a,b` | Comma-separated **tags** |\n" + e2 + "end\n"
	if string(out) != want {
		t.Fatalf("spliced:\n%s\nwant:\n%s", out, want)
	}
	if _, err := s.Splice([]byte("intro\n" + b1 + e1)); err == nil || !strings.Contains(err.Error(), `"more"`) {
		t.Fatalf("missing markers: %v", err)
	}
}

func TestFuncDefaultThatDoesNotParsePanics(t *testing.T) {
	s := &Set{}
	s.Func("bad", "x", "help", func(string) error { return errors.New("no") })
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	s.Defaults()
}

package decoy

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"regexp"
	"slices"
)

// Type is what a trap kind implements, in a file of its own (kind_*.go) that registers it
// from init: register(myKind{}). Its description and its renderer are required (a kind
// without a renderer does not compile; one whose description is incomplete stops the
// program at start); what else it does is an optional capability, one small interface each:
//
//   - skeletal: its text is the trap's own but for its placements (rendered once per trap
//     and minute as a skeleton, skeleton.go);
//   - Protocol: it answers a POST in a protocol of its own (MCP's JSON-RPC) instead of
//     with its decoy, and the listener carries that protocol's transports;
//   - lureTarget: the lure proxy may link to it (a page an agent reads);
//   - visibleLinks: its links sit in text a person reads as it is (llms.txt, robots.txt),
//     so opening one is reading, not following hidden content;
//   - disallower: its decoy lists the site's listed traps (Spec.Disallow: robots.txt);
//   - fixedLayout: where its placements of a purpose stand when its layout varies by request;
//   - titler: it generates its public title itself (llms.txt is named after its site).
//
// Everything outside this package asks a resolved *Kind (Kinds, KindOf), never a kind's name.
type Type interface {
	About() About
	render(r *renderer) Rendered
}

// About is what a kind declares of itself.
type About struct {
	Name string // the trap's type, as stored and in both APIs: lower-case snake_case
	Help string // what it serves, in a few words, for the dashboard and the API documents
	// Order is the kind's place in the documented lists (enums, dashboard): unique, ascending.
	Order int
	// FixedPath is the one path the kind works at ("" for any): such a trap gets it.
	FixedPath string
	// Stems are plausible path prefixes for a trap whose path is left out (one of FixedPath
	// and Stems is required).
	Stems []string
	// Format is what the kind's decoy answers in: its answer to a method it does not serve
	// is in the same format.
	Format Format
	// Listed says robots.txt disallows the kind's traps among its entries; robots.txt and
	// llms.txt themselves are not.
	Listed bool
	// Wheres are the placements' locations only this kind has (Where… constants), each with
	// its name in words for people reading a session ("llms.txt").
	Wheres map[string]string
}

// Format is what a decoy answers in.
type Format uint8

const (
	FormatHTML Format = iota + 1
	FormatJSON
	FormatText
)

// Optional capabilities of a Type (see Type).
type (
	skeletal     interface{ skeletal() }
	lureTarget   interface{ lureTarget() }
	visibleLinks interface{ visibleLinks() }
	disallower   interface{ disallows() }
	fixedLayout  interface{ placedOnly() map[Purpose]string }
	// titler: the kind names its generated public title itself (PublicTitle).
	titler interface {
		title(topic, org string, site *mrand.Rand) string
	}
	// Protocol is a kind that answers a POST in its own protocol (for hit hitID, its body
	// read in full) rather than with its decoy; the listener serves the protocol's
	// transports (MCP's streamable HTTP and its legacy HTTP+SSE streams).
	Protocol interface {
		answer(key Key, spec Spec, hitID string, body []byte) MCPResult
	}
)

// Kind is a registered trap kind: its Type, what it declared and which capabilities it
// has, resolved once at start. The listener's routes hold it, so a request never looks
// a kind up by name.
type Kind struct {
	About
	typ       Type
	skeleton  bool
	protocol  Protocol // nil: a POST gets the decoy, its body read for tokens and prompts
	lure      bool
	visible   bool
	disallows bool
	only      map[Purpose]string
}

// Kinds are the registered kinds, in the documented order (About.Order). Complete once
// the package is initialised: read it from functions, never from a package variable's initialiser.
var Kinds []*Kind

var kindByName = map[string]*Kind{}

// register adds a kind; an incomplete or clashing one stops the program at start.
func register(t Type) {
	k, err := resolve(t, Kinds)
	if err != nil {
		panic("decoy: " + err.Error())
	}
	i, _ := slices.BinarySearchFunc(Kinds, k.Order, func(a *Kind, o int) int { return a.Order - o })
	Kinds = slices.Insert(Kinds, i, k)
	kindByName[k.Name] = k
	for w, label := range k.Wheres {
		whereLabels[w] = label
	}
}

var kindName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// resolve checks t's declaration against itself and the kinds registered before it, and
// reads its capabilities.
func resolve(t Type, others []*Kind) (*Kind, error) {
	a := t.About()
	var errs []error
	if !kindName.MatchString(a.Name) {
		errs = append(errs, fmt.Errorf("name %q is not lower-case snake_case", a.Name))
	}
	if a.Help == "" {
		errs = append(errs, errors.New("no help text"))
	}
	if a.Order <= 0 {
		errs = append(errs, errors.New("no order (a positive place in the documented lists)"))
	}
	if a.FixedPath == "" && len(a.Stems) == 0 {
		errs = append(errs, errors.New("no path: neither a fixed path nor stems"))
	}
	if a.Format < FormatHTML || a.Format > FormatText {
		errs = append(errs, errors.New("no format (HTML, JSON or text)"))
	}
	for w, label := range a.Wheres {
		if !kindName.MatchString(w) || label == "" {
			errs = append(errs, fmt.Errorf("where %q needs a snake_case name and a label", w))
		}
		if sharedWheres[w] != "" {
			errs = append(errs, fmt.Errorf("where %q is a shared one", w))
		}
	}
	for _, o := range others {
		if o.Name == a.Name {
			errs = append(errs, fmt.Errorf("name %q registered twice", a.Name))
		}
		if o.Order == a.Order {
			errs = append(errs, fmt.Errorf("order %d taken by %s", a.Order, o.Name))
		}
		if a.FixedPath != "" && o.FixedPath == a.FixedPath {
			errs = append(errs, fmt.Errorf("fixed path %s taken by %s", a.FixedPath, o.Name))
		}
		for w := range a.Wheres {
			if o.Wheres[w] != "" {
				errs = append(errs, fmt.Errorf("where %q taken by %s", w, o.Name))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("kind %q (%T): %w", a.Name, t, err)
	}
	k := &Kind{About: a, typ: t}
	_, k.skeleton = t.(skeletal)
	k.protocol, _ = t.(Protocol)
	_, k.lure = t.(lureTarget)
	_, k.visible = t.(visibleLinks)
	_, k.disallows = t.(disallower)
	if f, ok := t.(fixedLayout); ok {
		k.only = f.placedOnly()
	}
	return k, nil
}

// Render produces the kind's decoy of spec for the hit hitID (see the package's Render).
func (k *Kind) Render(key Key, spec Spec, hitID string) Rendered {
	return render(k, key, spec, hitID, true)
}

// Serve is Render for the trap listener: the same response, without Placements when it
// knows its Links (a skeleton's), which is all the listener reads of them — their slice and
// URLs were ~1.2 KB and a few allocations of every response (docs/benchmarks.md, "CPU per hit").
func (k *Kind) Serve(key Key, spec Spec, hitID string) Rendered {
	return render(k, key, spec, hitID, false)
}

// Speaks says the kind answers a POST in a protocol of its own (Answer), and its clients
// may open the protocol's streams.
func (k *Kind) Speaks() bool { return k.protocol != nil }

// Answer is the kind's protocol answer to a POST of body (Speaks).
func (k *Kind) Answer(key Key, spec Spec, hitID string, body []byte) MCPResult {
	return k.protocol.answer(key, spec, hitID, body)
}

// LureTarget says a lure may link to the kind's traps.
func (k *Kind) LureTarget() bool { return k.lure }

// VisibleLinks says the kind's links sit in text a person reads as it is.
func (k *Kind) VisibleLinks() bool { return k.visible }

// Disallows says the kind's decoy lists the site's listed traps (Spec.Disallow).
func (k *Kind) Disallows() bool { return k.disallows }

// KindOf returns the kind named name.
func KindOf(name string) (*Kind, bool) {
	k, ok := kindByName[name]
	return k, ok
}

// MustKind returns the kind named name and panics when there is none: every stored type
// comes from Kinds, so an unknown one is a bug to see at once, not a page to serve.
func MustKind(name string) *Kind {
	k, ok := kindByName[name]
	if !ok {
		panic(fmt.Sprintf("decoy: unknown trap kind %q", name))
	}
	return k
}

// Names are the kinds' names, in the documented order: the allowed values of a trap's type.
func Names() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

// Unlisted are the kinds robots.txt does not list.
func Unlisted() []string {
	var out []string
	for _, k := range Kinds {
		if !k.Listed {
			out = append(out, k.Name)
		}
	}
	return out
}

// VisibleLinksAt says path is the fixed path of a kind whose links a person reads as they
// are (llms.txt, robots.txt).
func VisibleLinksAt(path string) bool {
	for _, k := range Kinds {
		if k.visible && k.FixedPath == path {
			return true
		}
	}
	return false
}

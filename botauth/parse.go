// Package botauth verifies signed agents (Web Bot Auth): a request's HTTP message
// signature (RFC 9421, Ed25519) checked against the keys of the key directory its
// Signature-Agent header names (/.well-known/http-message-signatures-directory, a JWKS),
// fetched through the outbound guard, cached with bounds, and the signature's nonce
// remembered against replay. The trap listener asks it once per signed hit and records
// the answer as a fact (detect.Signature); detect fires the signals.
package botauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	sfv "github.com/dunglas/httpsfv"

	"github.com/flytrap/flytrap/detect"
)

// Bounds on what is read of a signed request's headers: a signature is a few hundred bytes.
const (
	maxSignatureHeader = 8 << 10 // Signature, Signature-Input: each, all lines together
	maxAgentHeader     = 2 << 10 // Signature-Agent
	maxSignatures      = 16      // members of Signature-Input looked at
	maxComponents      = 32      // covered components of the signature
	maxAgentURL        = 512
	maxKeyID           = 256
	maxNonce           = 256
	tagWebBotAuth      = "web-bot-auth"
	// WellKnown is where an agent's key directory lives under the origin its Signature-Agent names.
	WellKnown = "/.well-known/http-message-signatures-directory"
)

// Parsed is what the headers of a signed request say, before any key is looked at.
type Parsed struct {
	Label      string   // the web-bot-auth signature's label in Signature-Input and Signature
	KeyID      string   // keyid: the JWK thumbprint of the signing key
	Nonce      string   // "" when none
	Alg        string   // "" when none
	Created    int64    // Unix seconds
	Expires    int64    // Unix seconds; 0 when none
	Components []string // covered component names (lower case)
	Origin     string   // the agent as shown: scheme://host of the Signature-Agent URL
	Directory  string   // the key directory's URL
	// AgentValue, when the signature covers a member of a dictionary Signature-Agent
	// ("signature-agent";key="…"), is that member serialized: the component's value
	// (RFC 9421 §2.1.2), which stands in for the header at verification.
	AgentValue  string
	AgentMember string // the member's name, "" for the string form
}

// problem is why a signature is not verified: invalid, or not checkable here.
type problem struct {
	state  detect.SignatureState
	reason string
}

func (p *problem) Error() string { return p.state.String() + ": " + p.reason }

func invalid(format string, a ...any) error {
	return &problem{detect.SignatureInvalid, fmt.Sprintf(format, a...)}
}

func unverifiable(format string, a ...any) error {
	return &problem{detect.SignatureUnverifiable, fmt.Sprintf(format, a...)}
}

// factOf turns a problem into the fact recorded, with what was read of the agent and key.
func factOf(err error, p *Parsed) detect.Signature {
	f := detect.Signature{State: detect.SignatureInvalid, Reason: err.Error()}
	var pr *problem
	if errors.As(err, &pr) {
		f.State, f.Reason = pr.state, pr.reason
	}
	if p != nil {
		f.Agent, f.KeyID = p.Origin, p.KeyID
	}
	f.Reason = clip(f.Reason, 300)
	return f
}

// Signed reports whether the request carries a signature at all.
func Signed(h http.Header) bool {
	return len(h["Signature"]) > 0 || len(h["Signature-Input"]) > 0
}

// Parse reads the Web Bot Auth signature of a request's headers: the web-bot-auth
// tagged member of Signature-Input, its signature, its parameters, and the agent its
// Signature-Agent names (string or dictionary form). It never fetches anything. Every
// input is an attacker's: sizes are bounded, and an error says whether the signature is
// invalid or cannot be checked here (a *problem).
func Parse(h http.Header) (*Parsed, error) {
	sigs, inputs := h["Signature"], h["Signature-Input"]
	switch {
	case len(sigs) == 0:
		return nil, invalid("Signature-Input without Signature")
	case len(inputs) == 0:
		return nil, invalid("Signature without Signature-Input")
	case size(sigs) > maxSignatureHeader || size(inputs) > maxSignatureHeader:
		return nil, invalid("signature headers larger than %d bytes", maxSignatureHeader)
	}
	in, err := sfv.UnmarshalDictionary(inputs)
	if err != nil {
		return nil, invalid("Signature-Input is not a structured dictionary")
	}
	names := in.Names()
	if len(names) > maxSignatures {
		return nil, invalid("more than %d signatures", maxSignatures)
	}
	p := &Parsed{}
	var list sfv.InnerList
	for _, name := range names {
		m, _ := in.Get(name)
		l, ok := m.(sfv.InnerList)
		if !ok {
			return nil, invalid("Signature-Input member %q is not an inner list", clip(name, 40))
		}
		if tag, _ := l.Params.Get("tag"); tag == tagWebBotAuth {
			p.Label, list = name, l
			break
		}
	}
	if p.Label == "" {
		return nil, unverifiable("no signature tagged %q", tagWebBotAuth)
	}
	sd, err := sfv.UnmarshalDictionary(sigs)
	if err != nil {
		return nil, invalid("Signature is not a structured dictionary")
	}
	sm, ok := sd.Get(p.Label)
	if it, isItem := sm.(sfv.Item); !ok || !isItem {
		return nil, invalid("no signature labelled %q", clip(p.Label, 40))
	} else if b, isBytes := it.Value.([]byte); !isBytes || len(b) == 0 {
		return nil, invalid("signature %q is not a byte sequence", clip(p.Label, 40))
	}
	if err := p.params(list.Params); err != nil {
		return p, err
	}
	if err := p.components(list, len(h["Signature-Agent"]) > 0); err != nil {
		return p, err
	}
	if err := p.agent(h["Signature-Agent"]); err != nil {
		return p, err
	}
	return p, nil
}

// params reads the signature's parameters: created and keyid required, expires, nonce,
// alg and tag optional, nothing else (RFC 9421 §2.3).
func (p *Parsed) params(ps *sfv.Params) error {
	for _, name := range ps.Names() {
		v, _ := ps.Get(name)
		switch name {
		case "created", "expires":
			n, ok := v.(int64)
			if !ok || n < 0 {
				return invalid("%s is not a positive integer", name)
			}
			if name == "created" {
				p.Created = n
			} else {
				p.Expires = n
			}
		case "keyid", "nonce", "alg", "tag":
			s, ok := v.(string)
			if !ok {
				return invalid("%s is not a string", name)
			}
			switch name {
			case "keyid":
				if len(s) > maxKeyID {
					return invalid("keyid longer than %d bytes", maxKeyID)
				}
				p.KeyID = s
			case "nonce":
				if len(s) > maxNonce {
					return invalid("nonce longer than %d bytes", maxNonce)
				}
				p.Nonce = s
			case "alg":
				p.Alg = s
			}
		default:
			return invalid("unknown signature parameter %q", clip(name, 40))
		}
	}
	switch {
	case p.KeyID == "":
		return invalid("no keyid")
	case p.Created == 0:
		return invalid("no created time")
	case p.Alg != "" && p.Alg != "ed25519":
		return unverifiable("algorithm %q is not verified here (Ed25519 only)", clip(p.Alg, 40))
	}
	return nil
}

// components reads the covered components: names in lower case, the parameters this
// verifier computes (key on signature-agent, name on @query-param) and no other.
func (p *Parsed) components(l sfv.InnerList, agentSent bool) error {
	if len(l.Items) > maxComponents {
		return invalid("more than %d covered components", maxComponents)
	}
	agentCovered := 0
	for _, it := range l.Items {
		name, ok := it.Value.(string)
		if !ok || name == "" || name != strings.ToLower(name) {
			return invalid("a covered component is not a lower-case string")
		}
		for _, param := range it.Params.Names() {
			switch {
			case name == "signature-agent" && param == "key":
				k, _ := it.Params.Get("key")
				member, ok := k.(string)
				if !ok || member == "" {
					return invalid("signature-agent's key is not a name")
				}
				p.AgentMember = member
			case name == "@query-param" && param == "name":
			default:
				return unverifiable("component parameter %q on %q is not supported", clip(param, 20), clip(name, 40))
			}
		}
		if name == "signature-agent" {
			agentCovered++
		}
		p.Components = append(p.Components, name)
	}
	switch {
	case !contains(p.Components, "@authority"):
		return invalid("@authority is not covered")
	case agentCovered > 1:
		return unverifiable("Signature-Agent covered more than once")
	case agentCovered == 0 && !agentSent:
		return unverifiable("no Signature-Agent: no key directory to look the key up in")
	case agentCovered == 0:
		return invalid("Signature-Agent is not covered")
	}
	return nil
}

// agent reads the Signature-Agent header: a string (the older form, "https://agent.example")
// or the member of a dictionary the signature covers (name="https://agent.example").
func (p *Parsed) agent(vs []string) error {
	if len(vs) == 0 {
		return invalid("Signature-Agent is covered but absent")
	}
	if size(vs) > maxAgentHeader {
		return invalid("Signature-Agent larger than %d bytes", maxAgentHeader)
	}
	var raw string
	if p.AgentMember != "" {
		d, err := sfv.UnmarshalDictionary(vs)
		if err != nil {
			return invalid("Signature-Agent is not a dictionary, but the signature covers a member of one")
		}
		m, ok := d.Get(p.AgentMember)
		it, isItem := m.(sfv.Item)
		if !ok || !isItem {
			return invalid("Signature-Agent has no member %q", clip(p.AgentMember, 40))
		}
		s, isString := it.Value.(string)
		if !isString {
			return invalid("Signature-Agent member %q is not a string", clip(p.AgentMember, 40))
		}
		ser, err := sfv.Marshal(it)
		if err != nil {
			return invalid("Signature-Agent member %q cannot be serialized", clip(p.AgentMember, 40))
		}
		raw, p.AgentValue = s, ser
	} else {
		if len(vs) > 1 {
			return unverifiable("several Signature-Agent lines")
		}
		it, err := sfv.UnmarshalItem(vs)
		if s, ok := it.Value.(string); err == nil && ok {
			raw = s
		} else {
			raw = strings.TrimSpace(vs[0]) // a bare URL, as some early signers send
		}
	}
	return p.directory(raw)
}

// directory makes the key directory's URL of the agent's: an origin gets the well-known
// path; a URL with a path is taken as the directory itself. Only https, no user info.
func (p *Parsed) directory(raw string) error {
	if len(raw) > maxAgentURL {
		return invalid("Signature-Agent URL longer than %d bytes", maxAgentURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		if err == nil && u.Scheme == "data" {
			return unverifiable("Signature-Agent data: URIs are not supported")
		}
		return invalid("Signature-Agent is not an absolute URL")
	case u.Scheme != "https":
		return unverifiable("Signature-Agent scheme %q is not fetched (https only)", clip(u.Scheme, 20))
	case u.User != nil:
		return invalid("Signature-Agent URL carries user info")
	}
	host := strings.ToLower(u.Host)
	p.Origin = "https://" + host
	// One directory an origin, at its well-known path: a Signature-Agent with another path
	// or a query would make every variant a new fetch and a new cache entry (one hanging host
	// behind eight query strings held every fetch slot: a red-team finding).
	if (u.Path != "" && u.Path != "/" && u.Path != WellKnown) || u.RawQuery != "" || u.ForceQuery {
		return unverifiable("Signature-Agent %q names a path or query: only an origin's %s is fetched", clip(raw, 80), WellKnown)
	}
	p.Directory = p.Origin + WellKnown
	return nil
}

func size(vs []string) int {
	n := 0
	for _, v := range vs {
		n += len(v) + 2
	}
	return n
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// clip cuts attacker text for a reason or a fact, on a rune boundary, printable.
func clip(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8Start(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

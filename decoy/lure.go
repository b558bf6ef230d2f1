package decoy

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/flytrap/flytrap/ids"
)

// Origin says what minted a token.
type Origin uint8

// The origins of tokens.
const (
	// OriginHit: a decoy response, stored as the hit HitID.
	OriginHit Origin = iota
	// OriginLure: a lure the proxy put into one of the customer's pages. Nothing is stored
	// for it (the customer's traffic is not recorded): HitID is the id that response
	// would have had, its time is when it was served, and it names its site (LureServed).
	OriginLure
	// OriginSnippet: a lure snippet pasted into the customer's templates; stable, it names
	// TrapID and nothing else.
	OriginSnippet
)

// Token versions (the high nibble of the payload's version/purpose byte).
const (
	lureVersion    = 2
	snippetVersion = 3
)

// domLureSite separates the site tag of a lure token from every other HMAC input;
// domLurePage the page tag.
const (
	domLureSite byte = 0x81
	domLurePage byte = 0x82
)

func refOf(v byte, u *[16]byte, index int, p Purpose) (TokenRef, bool) {
	switch v {
	case tokenVersion:
		return TokenRef{HitID: formatHitID(u), Index: index, Purpose: p}, true
	case lureVersion:
		return TokenRef{HitID: formatHitID(u), Index: index, Purpose: p, Origin: OriginLure}, true
	case snippetVersion:
		return TokenRef{TrapID: ids.Format(ids.Trap, *u), Index: index, Purpose: p, Origin: OriginSnippet}, true
	}
	return TokenRef{}, false
}

// siteTag binds a lure token to the site whose page carried it: 4 bytes of the response id.
func (m *macer) siteTag(siteID string) []byte {
	m.h.Reset()
	m.h.Write([]byte{domLureSite})
	m.h.Write([]byte(siteID))
	return m.h.Sum(m.sum[:0])[:4]
}

// pageTag binds a lure token to the page of the site that carried it: 4 bytes of the
// response id, after the site tag. The path is not in the token; a candidate (the page the
// engine saw served, the follow-up's Referer) is checked against it (LurePage).
func (m *macer) pageTag(siteID, page string) []byte {
	m.h.Reset()
	m.h.Write([]byte{domLurePage})
	m.h.Write([]byte(siteID))
	m.h.Write([]byte{0})
	m.h.Write([]byte(page))
	return m.h.Sum(m.sum[:0])[:4]
}

// LurePageTag is the page tag of lure token ref (zero for another token): a key to look
// up the page an engine saw carry lures (LurePageTagOf), to be confirmed with LurePage.
func LurePageTag(ref TokenRef) [4]byte {
	u, ok := parseHitID(ref.HitID)
	if ref.Origin != OriginLure || !ok {
		return [4]byte{}
	}
	return [4]byte(u[10:14])
}

// LurePageTagOf is the page tag lures served on page of siteID carry.
func LurePageTagOf(key Key, siteID, page string) [4]byte {
	if len(key) < MinKeyLen {
		return [4]byte{}
	}
	m := getMacer(key)
	defer putMacer(m)
	return [4]byte(m.pageTag(siteID, page))
}

// LurePage reports whether lure token ref was served in page (a path) of siteID.
func LurePage(key Key, ref TokenRef, siteID, page string) bool {
	tag := LurePageTag(ref)
	return ref.Origin == OriginLure && tag == LurePageTagOf(key, siteID, page) && tag != [4]byte{}
}

// versioned seals (ulid, index, p) under token version v.
func (m *macer) versioned(v byte, u *[16]byte, index int, p Purpose) string {
	var pl [payloadLen]byte
	copy(pl[:16], u[:])
	pl[16] = v<<4 | byte(p)
	pl[17] = byte(index)
	raw := m.seal(&pl)
	return encodeToken(&raw)
}

// snippet seals trap id u as a snippet's token, with the HMAC seal: a snippet is pasted
// into pages and caches, and must stay the token it was when the AES seal came (seal.go).
func (m *macer) snippet(u *[16]byte) string {
	var pl [payloadLen]byte
	copy(pl[:16], u[:])
	pl[16] = snippetVersion<<4 | byte(Callback)
	raw := m.sealHMAC(&pl)
	return encodeToken(&raw)
}

// LureServed reports whether ref is a lure token minted for a page of siteID, and when
// that page was served. A lure token brought to another site's listener is ignored.
func LureServed(key Key, ref TokenRef, siteID string) (time.Time, bool) {
	u, ok := parseHitID(ref.HitID)
	if ref.Origin != OriginLure || !ok || len(key) < MinKeyLen {
		return time.Time{}, false
	}
	m := getMacer(key)
	defer putMacer(m)
	if string(m.siteTag(siteID)) != string(u[6:10]) {
		return time.Time{}, false
	}
	return time.UnixMilli(hitTime(&u)), true
}

// SnippetToken is the stable token of trapID's lure snippet (a Callback, index 0): the
// same for as long as the installation's key lasts. "" for an id that is not a trap's.
func SnippetToken(key Key, trapID string) string {
	u, ok := ids.Parse(trapID, ids.Trap)
	if !ok || len(key) < MinKeyLen {
		return ""
	}
	raw := [16]byte(u)
	m := getMacer(key)
	defer putMacer(m)
	return m.snippet(&raw)
}

// LureTarget is a trap a lure may point at: its path on the site.
type LureTarget struct {
	Path string
	// Title is the link's text: the target's PublicTitle, never the trap's name (a
	// visitor reads it). "" reads as the path.
	Title string
}

// LureSpec is what one page's lures are made of.
type LureSpec struct {
	SiteID  string
	Page    string       // the path of the page that carries them (its tokens tell, LurePage)
	Targets []LureTarget // at least one
	Count   int          // lures in the page, 1 to MaxLures
}

// MaxLures is the most lures one page carries.
const MaxLures = 3

// Lure renders the hidden lures of one proxied page, served at now: an HTML fragment to
// insert into the page's body, and its placements. Each lure points at one of the
// targets with a fresh token; the fragment renders nothing a person sees (an HTML
// comment and elements with the hidden attribute, which needs no inline style and so
// passes a strict Content-Security-Policy) and stays out of the accessibility tree.
func Lure(key Key, spec LureSpec, now time.Time) ([]byte, []Placement) {
	if len(spec.Targets) == 0 || len(key) < MinKeyLen {
		return nil, nil
	}
	count := min(max(spec.Count, 1), MaxLures)
	m := getMacer(key)
	defer putMacer(m)
	var u [16]byte
	ms := uint64(now.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	copy(u[6:10], m.siteTag(spec.SiteID))
	copy(u[10:14], m.pageTag(spec.SiteID, spec.Page))
	_, _ = rand.Read(u[14:])
	rnd := mrand.New(mrand.NewPCG(binary.BigEndian.Uint64(u[8:16]), uint64(ms)))
	wording := rnd.IntN(len(challengeWordings))
	first := rnd.IntN(len(spec.Targets))
	target := func(i int) LureTarget { return spec.Targets[(first+i)%len(spec.Targets)] }
	link := func(t LureTarget, tok string) string { return t.Path + "?ref=" + tok }

	var b []byte
	var places []Placement
	w := func(ss ...string) {
		for _, s := range ss {
			b = append(b, s...)
		}
	}
	// The placements the decoys use, one kind per lure: a hidden link, an HTML comment, an instruction.
	for i := range count {
		t := target(i)
		switch i {
		case 0:
			tok := m.versioned(lureVersion, &u, i, Callback)
			href := link(t, tok)
			places = append(places, Placement{Index: i, Where: WhereCSSHidden, Purpose: Callback, Token: tok, URL: href})
			w("\n<div hidden aria-hidden=\"true\"><a href=\"")
			b = appendHTML(b, href)
			w("\" tabindex=\"-1\" rel=\"nofollow\">")
			b = appendHTML(b, clean(lureTitle(t), 120))
			w("</a></div>")
		case 1:
			tok := m.versioned(lureVersion, &u, i, Callback)
			href := link(t, tok)
			places = append(places, Placement{Index: i, Where: WhereHTMLComment, Purpose: Callback, Token: tok, URL: href})
			w("\n<!-- printable version for crawlers and assistants: ")
			b = appendHTML(b, strings.ReplaceAll(href, "--", "%2D%2D"))
			w(" -->")
		default:
			tok := m.versioned(lureVersion, &u, i, Challenge)
			href := link(t, tok)
			a, c := m.challengeOperands(&u, i, Challenge)
			places = append(places, Placement{Index: i, Where: WhereAriaHidden, Purpose: Challenge, Token: tok, URL: href})
			cw := challengeWordings[wording]
			text := cw[0] + href + "&code=N" + strings.TrimPrefix(cw[1], "?code=N") + numberWords(a) + cw[2] + numberWords(c) + cw[3]
			w("\n<div hidden aria-hidden=\"true\">")
			b = appendHTML(b, text)
			w("</div>")
		}
	}
	w("\n")
	return b, places
}

// lureTitle is the text of a lure linking to t: every lure's words about its target come
// from here, and only from the target's public title or path.
func lureTitle(t LureTarget) string {
	if t.Title != "" {
		return t.Title
	}
	if p, err := url.PathUnescape(t.Path); err == nil {
		return p
	}
	return t.Path
}

// Snippet is the lure snippet of trap trapID at path: hidden HTML for the customer's own
// templates, linking to the trap with its stable SnippetToken. title is the link's text:
// the trap's PublicTitle, never its name.
func Snippet(key Key, trapID, path, title string) (html, url, token string) {
	token = SnippetToken(key, trapID)
	if token == "" {
		return "", "", ""
	}
	url = path + "?ref=" + token
	b := []byte("<div hidden aria-hidden=\"true\"><a href=\"")
	b = appendHTML(b, url)
	b = append(b, "\" tabindex=\"-1\" rel=\"nofollow\">"...)
	b = appendHTML(b, clean(lureTitle(LureTarget{Path: path, Title: title}), 120))
	b = append(b, "</a></div>"...)
	return string(b), url, token
}

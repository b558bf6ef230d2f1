package detect

import (
	"net/netip"
	"net/url"
	"strings"
)

// DNSCheck is what forward-confirmed reverse DNS (FCrDNS) found for a request's address:
// the PTR record's host name must lie under a domain the claimed crawler's operator
// documents, and that name's A/AAAA records must hold the address. The trap listener
// looks it up (crawler.Verifier); detect only reads the result.
type DNSCheck uint8

const (
	DNSNotChecked      DNSCheck = iota // no crawler claim that DNS can check, or the resolver is off
	DNSConfirmed                       // PTR host under the operator's domains, and it resolves back to the address
	DNSNoPTR                           // the address has no PTR record (NXDOMAIN or no answer)
	DNSWrongDomain                     // the PTR host lies outside the operator's domains
	DNSForwardMismatch                 // the PTR host does not resolve back to the address
	DNSPending                         // not answered within the listener's budget (the lookup goes on into the cache)
	DNSFailed                          // the resolver failed or timed out (SERVFAIL, refused, no answer)
	DNSBusy                            // too many lookups in flight: not looked up
	dnsChecks
)

var dnsCheckNames = [...]string{"not checked", "confirmed", "no PTR record", "wrong domain", "forward mismatch",
	"not answered within the budget", "resolver failed", "resolver busy"}

func (c DNSCheck) String() string {
	if c >= dnsChecks {
		return "unknown"
	}
	return dnsCheckNames[c]
}

// Conclusive reports whether c says something of the claim: confirmed, or a definite
// failure (no PTR, wrong domain, forward mismatch). A slow, failed or skipped lookup
// says nothing, and the published ranges decide alone.
func (c DNSCheck) Conclusive() bool {
	return c == DNSConfirmed || c == DNSNoPTR || c == DNSWrongDomain || c == DNSForwardMismatch
}

// dnsDomains are the domains under which each crawler's operator documents its PTR host
// names (docs/detection.md cites each operator's page), by lower-cased Agent.Name.
// googleusercontent.com is left out on purpose: Google's user-triggered fetchers resolve
// there, but so does any Google Cloud customer's App Engine, so it proves no Googlebot.
var dnsDomains = func() map[string][]string {
	m := map[string][]string{}
	add := func(domains []string, agents ...string) {
		for _, a := range agents {
			m[strings.ToLower(a)] = domains
		}
	}
	add([]string{"googlebot.com", "google.com"}, "Googlebot", "Storebot-Google", "Google-InspectionTool",
		"AdsBot-Google", "Mediapartners-Google", "APIs-Google", "FeedFetcher-Google", "GoogleOther")
	add([]string{"search.msn.com"}, "bingbot", "BingPreview", "msnbot", "AdIdxBot")
	add([]string{"applebot.apple.com"}, "Applebot")
	add([]string{"yandex.ru", "yandex.net", "yandex.com"}, "YandexBot")
	add([]string{"baidu.com", "baidu.jp"}, "Baiduspider")
	add([]string{"crawl.amazonbot.amazon"}, "Amazonbot")
	return m
}()

// signingDomains are the origins under which an operator's agents sign their requests
// (Web Bot Auth's Signature-Agent), beside its reverse-DNS domains, by lower-cased
// Agent.Name. OpenAI documents https://chatgpt.com as its agents' Signature-Agent.
var signingDomains = func() map[string][]string {
	m := map[string][]string{}
	for _, a := range []string{"GPTBot", "ChatGPT-User", "OAI-SearchBot", "ChatGPT Agent"} {
		m[strings.ToLower(a)] = []string{"chatgpt.com", "openai.com"}
	}
	return m
}()

// SignatureVouches reports whether a verified signature whose Signature-Agent is origin
// backs a's claim: the origin is its operator's (signingDomains, or the domains its
// operator documents for reverse DNS). A signature proves who signed, so one from any
// other origin proves nothing of the crawler or agent a user agent names: anyone can
// publish a key directory.
func SignatureVouches(a Agent, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return false
	}
	var buf [64]byte
	k := lowerKey(&buf, a.Name)
	if k == nil {
		return false
	}
	return HostInDomains(u.Hostname(), signingDomains[string(k)]) || HostInDomains(u.Hostname(), dnsDomains[string(k)])
}

// DNSDomains returns the domains a's operator documents for its crawler's reverse DNS,
// nil when it documents none. It does not allocate.
func DNSDomains(a Agent) []string {
	var buf [64]byte
	k := lowerKey(&buf, a.Name)
	if k == nil {
		return nil
	}
	return dnsDomains[string(k)]
}

// DNSAgents lists the agent names whose claims reverse DNS can check (docs, tests).
func DNSAgents() map[string][]string {
	m := make(map[string][]string, len(dnsDomains))
	for k, v := range dnsDomains {
		m[k] = append([]string(nil), v...)
	}
	return m
}

// HostInDomains reports whether host (a DNS name, any case, trailing dot or not) is one
// of domains or lies under one.
func HostInDomains(host string, domains []string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, d := range domains {
		if len(host) == len(d) && strings.EqualFold(host, d) ||
			len(host) > len(d) && host[len(host)-len(d)-1] == '.' && strings.EqualFold(host[len(host)-len(d):], d) {
			return true
		}
	}
	return false
}

// ClaimResult is what the evidence says of a crawler a user agent claims.
type ClaimResult uint8

const (
	ClaimNone       ClaimResult = iota // not a claim anything can check, or nothing concluded
	ClaimVerified                      // the operator's reverse DNS or its published ranges back it
	ClaimUnverified                    // checked, and nothing the operator publishes backs it
)

// Claim is the verification of one request's crawler claim, with what decided it.
type Claim struct {
	Result ClaimResult
	Agent  string
	Addr   netip.Addr
	DNS    DNSCheck
	Host   string       // the PTR host, when DNS found one
	List   *RangeList   // the ranges checked, nil when the operator publishes none
	Prefix netip.Prefix // the prefix holding Addr, when the ranges back it
}

// CheckClaim verifies the crawler a's user agent claims from addr, given what reverse
// DNS found (dns, host): verified when either method its operator documents backs it
// (forward-confirmed reverse DNS under the documented domains, or an address in the
// published ranges); unverified when a method was conclusive and none backs it (an
// address outside the ranges, or no PTR, a PTR in the wrong domain, a forward mismatch);
// nothing for crawlers no operator lets us check, or when DNS did not answer and there
// are no ranges. Loopback, private and link-local addresses never back a claim. It does
// not allocate; Detail builds the text.
func CheckClaim(a Agent, addr netip.Addr, dns DNSCheck, host string) Claim {
	domains := DNSDomains(a)
	list := rangesFor(a.Name)
	if list == nil && domains == nil {
		return Claim{}
	}
	c := Claim{Agent: a.Name, Addr: addr, List: list}
	addr = addr.Unmap()
	if backsNothing(addr) {
		c.Result = ClaimUnverified
		return c
	}
	if domains != nil {
		c.DNS, c.Host = dns, host
		if dns == DNSConfirmed && HostInDomains(host, domains) {
			c.Result = ClaimVerified
			return c
		}
	}
	if list != nil {
		if p, ok := inRanges(list, addr); ok {
			c.Result, c.Prefix = ClaimVerified, p
			return c
		}
		c.Result = ClaimUnverified
		return c
	}
	if c.DNS.Conclusive() {
		c.Result = ClaimUnverified // no ranges: only a conclusive DNS failure says it is not the crawler
	}
	return c
}

// Detail is the firing's evidence: what was claimed and what verified it, or why nothing did.
func (c Claim) Detail() string {
	var b strings.Builder
	switch c.Result {
	case ClaimVerified:
		b.WriteString(c.Agent + " from " + c.Addr.String() + " verified: ")
		if c.Prefix.IsValid() {
			b.WriteString("in " + c.Prefix.String() + " of " + c.List.describe())
		} else {
			b.WriteString("reverse DNS " + strings.TrimSuffix(c.Host, ".") + ", forward-confirmed")
		}
	case ClaimUnverified:
		b.WriteString(c.Agent + " from " + c.Addr.String() + " unverified: ")
		a := c.Addr.Unmap()
		switch {
		case backsNothing(a):
			b.WriteString("a private, loopback or link-local address backs no crawler")
		default:
			sep := ""
			if c.List != nil {
				b.WriteString("outside " + c.List.describe())
				sep = "; "
			}
			switch c.DNS {
			case DNSNotChecked:
			case DNSWrongDomain:
				b.WriteString(sep + "reverse DNS " + strings.TrimSuffix(c.Host, ".") + " is outside " +
					strings.Join(dnsDomains[strings.ToLower(c.Agent)], ", "))
			case DNSForwardMismatch:
				b.WriteString(sep + "reverse DNS " + strings.TrimSuffix(c.Host, ".") + " does not resolve back to the address")
			default:
				b.WriteString(sep + "reverse DNS: " + c.DNS.String())
			}
		}
	}
	return b.String()
}

// describe names a list for people: "Google's published list of 2026-09-02 (embedded)".
func (l *RangeList) describe() string {
	who := "the operator's"
	if l.Operator != "" {
		who = l.Operator + "'s"
	}
	how := "embedded"
	if l.Fetched {
		how = "fetched"
	}
	date := "undated"
	if !l.AsOf.IsZero() {
		date = "of " + l.AsOf.UTC().Format("2006-01-02")
	}
	return who + " published " + l.Name + " list " + date + " (" + how + ")"
}

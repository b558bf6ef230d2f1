package botauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/remitly-oss/httpsig-go"
	"github.com/remitly-oss/httpsig-go/key"
	"github.com/remitly-oss/httpsig-go/types"
	"golang.org/x/time/rate"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/internal/clientnet"
	"github.com/flytrap/flytrap/webhook"
)

// Config bounds what verifying signed agents may cost: a visitor decides how many
// signed requests it sends and which directories they name (docs/security.md).
type Config struct {
	// Guard is which addresses a directory fetch may connect to: public ones only unless
	// allowed (an agent's Signature-Agent is the visitor's word, so a private address would
	// be a request forgery into the operator's network).
	Guard webhook.Guard
	// RootCAs verifies directories' certificates instead of the system's (tests).
	RootCAs *x509.CertPool
	// Wait is the longest a request's answer waits for a directory not cached yet; past it
	// the hit records "unverifiable" and the fetch goes on for the next request. <0: never wait.
	Wait time.Duration
	// FetchTimeout bounds one directory fetch, connection to last byte.
	FetchTimeout time.Duration
	// MaxDirectoryBytes bounds a directory's body; MaxKeys the keys kept of one.
	MaxDirectoryBytes int64
	MaxKeys           int
	// Directories bounds the directories cached (answers and failures); Fetches the fetches
	// running at once (past it a directory not cached is "unverifiable" at once).
	Directories int
	Fetches     int
	// A directory is kept for its Cache-Control max-age within [MinTTL, MaxTTL]
	// (DefaultTTL without one); a failed fetch for FailureTTL.
	MinTTL, MaxTTL, DefaultTTL, FailureTTL time.Duration
	// MaxAge bounds a signature's life from its created time: when it has no expires, and
	// however far off its expires is. Skew is the clock difference allowed.
	MaxAge, Skew time.Duration
	// Nonces bounds the nonces remembered against replay (each until its signature expires).
	Nonces int
	// Now is the clock of the caches' lifetimes (nil: time.Now); a request's own time is
	// given to Verify.
	Now func() time.Time
	// Rate bounds the signature checks (parse aside: the Ed25519 verification) per second
	// on this instance, Burst their burst (0: a tenth of Rate); past it a signed hit is "unverifiable", so a flood
	// of forged signatures costs at most Rate checks' CPU a second.
	Rate  float64
	Burst int
}

// DefaultConfig is the verifier's configuration with nothing set.
func DefaultConfig() Config {
	return Config{
		Wait: 50 * time.Millisecond, FetchTimeout: 5 * time.Second,
		MaxDirectoryBytes: 64 << 10, MaxKeys: 32,
		Directories: 4096, Fetches: 8,
		MinTTL: time.Minute, MaxTTL: 24 * time.Hour, DefaultTTL: time.Hour, FailureTTL: 5 * time.Minute,
		MaxAge: time.Hour, Skew: time.Minute,
		Nonces: 100_000,
		Rate:   2000, // Burst 0: a tenth of Rate
	}
}

// shortMaxAge is the life of a signature without expires.
const shortMaxAge = 5 * time.Minute

// Verifier verifies signed agents' requests. It is safe for concurrent use; Close ends
// its fetches.
type Verifier struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	now    func() time.Time // the clock of cache lifetimes (a request's time is its own)

	dirs    *lru.Cache[string, *directory] // directories fetched
	failed  *lru.Cache[string, *directory] // fetches that failed: apart, so a stream of bad directories never pushes out good ones
	mu      sync.Mutex
	pending map[string]*fetchCall // single flight per directory URL
	slots   chan struct{}         // fetches running
	started map[netip.Prefix]int  // fetches running, by the network of the request that began each (clientNet)
	nonces  *lru.Cache[string, int64]
	nonceMu sync.Mutex
	checks  *rate.Limiter
	// netChecks bounds one client network's share of the checks (a tenth of Rate), so one
	// network signing with its own valid key cannot use up every check a second and leave
	// the other agents' signatures unverifiable.
	netChecks *lru.Cache[netip.Prefix, *rate.Limiter]
	netMu     sync.Mutex

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	fetches, failures, busy, limited atomic.Int64
}

// directory is a fetched key directory, or why it could not be had.
type directory struct {
	keys    map[string]ed25519.PublicKey // by JWK thumbprint (and by kid when it names one)
	err     string
	fetched time.Time // the last attempt to read it
	read    time.Time // when these keys were read
	expires time.Time
}

type fetchCall struct {
	done chan struct{}
	dir  *directory
}

// New returns a verifier; zero fields of cfg take DefaultConfig's.
func New(cfg Config, log *slog.Logger) *Verifier {
	d := DefaultConfig()
	fill := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&cfg.Wait, d.Wait)
	fill(&cfg.FetchTimeout, d.FetchTimeout)
	fill(&cfg.MinTTL, d.MinTTL)
	fill(&cfg.MaxTTL, d.MaxTTL)
	fill(&cfg.DefaultTTL, d.DefaultTTL)
	fill(&cfg.FailureTTL, d.FailureTTL)
	fill(&cfg.MaxAge, d.MaxAge)
	fill(&cfg.Skew, d.Skew)
	for _, p := range []*int{&cfg.MaxKeys, &cfg.Directories, &cfg.Fetches, &cfg.Nonces} {
		if *p <= 0 {
			switch p {
			case &cfg.MaxKeys:
				*p = d.MaxKeys
			case &cfg.Directories:
				*p = d.Directories
			case &cfg.Fetches:
				*p = d.Fetches
			default:
				*p = d.Nonces
			}
		}
	}
	if cfg.Rate <= 0 {
		cfg.Rate = d.Rate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = max(int(cfg.Rate/10), 1)
	}
	if cfg.MaxDirectoryBytes <= 0 {
		cfg.MaxDirectoryBytes = d.MaxDirectoryBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := cfg.Guard.Client(cfg.FetchTimeout)
	tr := client.Transport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = 16 << 10
	tr.MaxIdleConnsPerHost = 2
	if cfg.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	}
	client.Transport = tr
	dirs, _ := lru.New[string, *directory](cfg.Directories)
	failed, _ := lru.New[string, *directory](cfg.Directories)
	nonces, _ := lru.New[string, int64](cfg.Nonces)
	netChecks, _ := lru.New[netip.Prefix, *rate.Limiter](netLimiters)
	ctx, cancel := context.WithCancel(context.Background())
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Verifier{cfg: cfg, client: client, log: log, now: now, dirs: dirs, failed: failed, pending: map[string]*fetchCall{},
		slots: make(chan struct{}, cfg.Fetches), started: map[netip.Prefix]int{}, nonces: nonces, ctx: ctx, cancel: cancel,
		checks: rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst), netChecks: netChecks}
}

// Close stops the fetches under way and waits for them.
func (v *Verifier) Close() {
	v.cancel()
	v.wg.Wait()
}

// Stats reports the directory fetches made, those that failed, the directories not
// fetched because Fetches were already running, and the signatures left unchecked past Rate.
func (v *Verifier) Stats() (fetches, failures, busy, limited int64) {
	return v.fetches.Load(), v.failures.Load(), v.busy.Load(), v.limited.Load()
}

// Verify checks the signature of r (its body as read, truncated or not) at the request's
// time at: the fact to record. An unsigned request is SignatureNone at no cost. It waits
// at most cfg.Wait (or ctx) for a directory not cached.
func (v *Verifier) Verify(ctx context.Context, r *http.Request, body []byte, truncated bool, at time.Time) detect.Signature {
	if !Signed(r.Header) {
		return detect.Signature{}
	}
	p, err := Parse(r.Header)
	if err != nil {
		return factOf(err, p)
	}
	if err := p.window(at, v.cfg); err != nil {
		return factOf(err, p)
	}
	dir := v.directory(ctx, p.Directory)
	if dir == nil {
		return factOf(unverifiable("key directory %s not fetched yet", clip(p.Directory, 200)), p)
	}
	if dir.err != "" {
		return factOf(unverifiable("key directory %s: %s", clip(p.Directory, 200), dir.err), p)
	}
	pub, ok := dir.keys[p.KeyID]
	if !ok {
		if v.now().Sub(dir.fetched) >= v.cfg.MinTTL {
			// Keys rotate: a directory read a while ago is read again (at most once per MinTTL)
			// before a key it lacks condemns the signature.
			v.start(p.Directory, clientNet(ctx))
			return factOf(unverifiable("key not in the directory as cached; reading it again"), p)
		}
		return factOf(invalid("key %s is not in %s's directory", clip(p.KeyID, 80), p.Origin), p)
	}
	if !v.netAllow(clientNet(ctx)) {
		v.limited.Add(1)
		return factOf(unverifiable("more than %g signature checks a second from this client's network", v.cfg.Rate/10), p)
	}
	if !v.checks.Allow() {
		v.limited.Add(1)
		return factOf(unverifiable("more than %g signature checks a second on this instance", v.cfg.Rate), p)
	}
	if err := verifyMessage(r, body, truncated, p, pub); err != nil {
		return factOf(err, p)
	}
	f := detect.Signature{State: detect.SignatureValid, Agent: p.Origin, KeyID: clip(p.KeyID, 100)}
	if p.Nonce != "" && !v.remember(p, at) {
		f.State, f.Reason = detect.SignatureReplayed, "nonce already seen within the signature's window"
	}
	return f
}

// netLimiters bounds the client networks whose share of the checks is tracked (the least
// recently seen forgotten first: a forgotten network starts with a full burst again).
const netLimiters = 4096

// netAllow takes one of the network's checks: a tenth of Rate a second (burst a tenth of
// Burst). A request without a known client (tests) takes none.
func (v *Verifier) netAllow(n netip.Prefix) bool {
	if !n.IsValid() {
		return true
	}
	v.netMu.Lock()
	l, ok := v.netChecks.Get(n)
	if !ok {
		l = rate.NewLimiter(rate.Limit(v.cfg.Rate/10), max(v.cfg.Burst/10, 1))
		v.netChecks.Add(n, l)
	}
	v.netMu.Unlock()
	return l.Allow()
}

// window checks the signature's times against the request's: created not in the future,
// not expired, and not older than MaxAge (5 minutes without expires).
func (p *Parsed) window(at time.Time, cfg Config) error {
	created := time.Unix(p.Created, 0)
	if created.After(at.Add(cfg.Skew)) {
		return invalid("created %s, in the future", created.UTC().Format(time.RFC3339))
	}
	end := p.end(cfg)
	if at.After(end.Add(cfg.Skew)) {
		return invalid("expired at %s", end.UTC().Format(time.RFC3339))
	}
	if p.Expires != 0 && p.Expires < p.Created {
		return invalid("expires before it was created")
	}
	return nil
}

// end is when the signature stops being valid: its expires, at most MaxAge after created.
func (p *Parsed) end(cfg Config) time.Time {
	created := time.Unix(p.Created, 0)
	end := created.Add(shortMaxAge)
	if p.Expires != 0 {
		end = time.Unix(p.Expires, 0)
		if limit := created.Add(cfg.MaxAge); end.After(limit) {
			end = limit
		}
	}
	return end
}

// remember records the signature's nonce until its window ends; false when it was already
// there (a replay). The memory is bounded (Nonces, least recently seen forgotten first).
func (v *Verifier) remember(p *Parsed, at time.Time) bool {
	k := p.Origin + "\x00" + p.KeyID + "\x00" + p.Nonce
	until := p.end(v.cfg).Add(v.cfg.Skew).Unix()
	v.nonceMu.Lock()
	defer v.nonceMu.Unlock()
	if exp, ok := v.nonces.Get(k); ok && at.Unix() <= exp {
		return false
	}
	v.nonces.Add(k, until)
	return true
}

// keyOf is the fetched key, for httpsig.
type keyOf struct{ spec key.KeySpec }

func (k keyOf) FetchByKeyID(context.Context, http.Header, string) (key.KeySpecer, error) {
	return k.spec, nil
}

func (k keyOf) Fetch(context.Context, http.Header, types.MetadataProvider) (key.KeySpecer, error) {
	return nil, errors.New("a web-bot-auth signature names its keyid")
}

// verifyMessage checks the signature over the request as received with httpsig (RFC 9421):
// a copy holding only the covered fields, the signature headers, and, for a signature
// over a member of a dictionary Signature-Agent, that member's serialized value in the
// header's place (RFC 9421 §2.1.2; the library reads a field whole).
func verifyMessage(r *http.Request, body []byte, truncated bool, p *Parsed, pub ed25519.PublicKey) error {
	u := *r.URL
	req := &http.Request{Method: r.Method, URL: &u, Host: r.Host, TLS: r.TLS, Header: http.Header{}, Body: http.NoBody}
	req.Header["Signature"], req.Header["Signature-Input"] = r.Header["Signature"], r.Header["Signature-Input"]
	for _, c := range p.Components {
		if c[0] == '@' {
			continue
		}
		ck := http.CanonicalHeaderKey(c)
		if vs := r.Header[ck]; vs != nil {
			req.Header[ck] = vs
		}
	}
	if p.AgentMember != "" {
		req.Header["Signature-Agent"] = []string{p.AgentValue}
	}
	if contains(p.Components, "content-digest") {
		if truncated {
			return unverifiable("body too large to check its Content-Digest")
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	} else {
		delete(req.Header, "Content-Digest")
	}
	profile := httpsig.VerifyProfile{
		SignatureLabel:         p.Label,
		RequiredFields:         httpsig.Fields("@authority"),
		RequiredMetadata:       []httpsig.Metadata{httpsig.MetaCreated, httpsig.MetaKeyID},
		AllowedAlgorithms:      []httpsig.Algorithm{httpsig.Algo_ED25519},
		DisableTimeEnforcement: true, // window(): against the request's own time, which replays of the journal keep
	}
	spec := key.KeySpec{KeyID: p.KeyID, Algo: httpsig.Algo_ED25519, PubKey: pub}
	_, err := httpsig.Verify(req, keyOf{spec}, profile)
	if err == nil {
		return nil
	}
	var se *httpsig.SignatureError
	if errors.As(err, &se) {
		switch se.Code {
		case httpsig.ErrSigVerification:
			return invalid("the signature does not verify with key %s", clip(p.KeyID, 80))
		case httpsig.ErrNoSigWrongDigest:
			return invalid("the body does not match its Content-Digest")
		case httpsig.ErrUnsupported, httpsig.ErrNoSigUnsupportedDigest:
			return unverifiable("%s", clip(se.Message, 200))
		}
		return invalid("%s", clip(se.Message, 200))
	}
	return invalid("%s", clip(err.Error(), 200))
}

// directory returns the cached directory at url, or fetches it (one fetch per URL at a
// time, at most Fetches at once) and waits for it up to Wait; nil when it is not there in
// time (the fetch goes on, and fills the cache for the next request).
func (v *Verifier) directory(ctx context.Context, url string) *directory {
	client := clientNet(ctx)
	if d, ok := v.dirs.Get(url); ok {
		if !v.now().Before(d.expires) {
			v.start(url, client) // stale: read again in the background, the stale keys serve meanwhile
		}
		return d
	}
	if d, ok := v.failed.Get(url); ok && v.now().Before(d.expires) {
		return d
	}
	call := v.start(url, client)
	if call == nil || v.cfg.Wait < 0 {
		return nil
	}
	t := time.NewTimer(v.cfg.Wait)
	defer t.Stop()
	select {
	case <-call.done:
		return call.dir
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// start begins fetching url unless a fetch of it runs already (which it returns), every
// slot is taken, or the client's network began one that still runs (nil): one network
// cannot hold more than one of the Fetches slots with directories that never answer.
func (v *Verifier) start(url string, client netip.Prefix) *fetchCall {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.pending[url]; ok {
		return c
	}
	if client.IsValid() && v.started[client] >= fetchesPerNetwork {
		v.busy.Add(1)
		return nil
	}
	select {
	case v.slots <- struct{}{}:
	default:
		v.busy.Add(1)
		return nil
	}
	if client.IsValid() {
		v.started[client]++
	}
	c := &fetchCall{done: make(chan struct{})}
	v.pending[url] = c
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		d := v.fetch(url)
		old, had := v.dirs.Peek(url)
		switch {
		case d.err == "":
			v.dirs.Add(url, d)
			v.failed.Remove(url)
		case had && d.fetched.Sub(old.read) < v.cfg.MaxTTL:
			// A refresh that failed keeps the keys read before, tried again after FailureTTL,
			// for at most MaxTTL since they were read.
			kept := *old
			kept.fetched, kept.expires = d.fetched, d.expires
			v.dirs.Add(url, &kept)
		default:
			v.dirs.Remove(url)
			v.failed.Add(url, d)
		}
		v.mu.Lock()
		delete(v.pending, url)
		if client.IsValid() {
			if v.started[client]--; v.started[client] <= 0 {
				delete(v.started, client)
			}
		}
		v.mu.Unlock()
		<-v.slots
		c.dir = d
		close(c.done)
	}()
	return c
}

// fetch reads the key directory at url through the guard: 200, at most MaxDirectoryBytes,
// a JWKS whose Ed25519 keys are kept by thumbprint. A failure is cached too (FailureTTL).
func (v *Verifier) fetch(url string) *directory {
	v.fetches.Add(1)
	now := v.now()
	d, ttl, err := v.get(url)
	if err != nil {
		v.failures.Add(1)
		v.log.Debug("signature directory fetch failed", "url", url, "err", err)
		return &directory{err: clip(err.Error(), 200), fetched: now, expires: now.Add(v.cfg.FailureTTL)}
	}
	d.fetched, d.read, d.expires = now, now, now.Add(ttl)
	return d
}

func (v *Verifier) get(url string) (*directory, time.Duration, error) {
	ctx, cancel := context.WithTimeout(v.ctx, v.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, errors.New("not a URL")
	}
	req.Header.Set("Accept", "application/http-message-signatures-directory+json, application/json;q=0.5")
	resp, err := v.client.Do(req)
	if err != nil {
		if errors.Is(err, webhook.ErrForbiddenAddress) {
			return nil, 0, errors.New("refused: not a public address")
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, errors.New("timed out")
		}
		return nil, 0, errors.New("unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, errors.New("answered " + strconv.Itoa(resp.StatusCode))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, v.cfg.MaxDirectoryBytes+1))
	if err != nil {
		return nil, 0, errors.New("read failed")
	}
	if int64(len(b)) > v.cfg.MaxDirectoryBytes {
		return nil, 0, errors.New("larger than " + strconv.FormatInt(v.cfg.MaxDirectoryBytes, 10) + " bytes")
	}
	keys, err := ParseDirectory(b, v.cfg.MaxKeys)
	if err != nil {
		return nil, 0, err
	}
	return &directory{keys: keys}, v.ttl(resp.Header.Values("Cache-Control")), nil
}

// fetchesPerNetwork is how many directory fetches the requests of one network (clientNet)
// may have running at once.
const fetchesPerNetwork = 1

type clientKey struct{}

// WithClient is ctx carrying the address of the client whose request is verified (the
// trap listener's, through its trusted proxies): fetches are then bounded per network.
func WithClient(ctx context.Context, addr netip.Addr) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// clientNet is the network of ctx's client (clientnet.Of), or the zero prefix when ctx
// carries none.
func clientNet(ctx context.Context) netip.Prefix {
	a, _ := ctx.Value(clientKey{}).(netip.Addr)
	if !a.IsValid() {
		return netip.Prefix{}
	}
	return clientnet.Of(a)
}

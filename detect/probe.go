package detect

import (
	"strings"
	"time"

	"github.com/hbollon/go-edlib"
)

// ProbeWindow is how long an unknown path counts toward SYSTEMATIC_PROBING: a scanner's
// wordlist runs in minutes, while people behind one address (an office NAT sharing a
// browser build) mistype paths over hours.
const ProbeWindow = 10 * time.Minute

// ProbeClass is what an unknown path looks like.
type ProbeClass uint8

const (
	// ProbeTypo is a near miss of a path the site serves or its decoys linked: a person's
	// mistake (a typo, a case or trailing-slash variant, a truncated link). Never a probe.
	ProbeTypo ProbeClass = iota + 1
	// ProbeUnknown is any other unknown path: a probe when a program asks for it.
	ProbeUnknown
	// ProbeWordlist is a path scanners' wordlists try (.env, wp-admin, .git/config, …):
	// a probe from anyone, a browser included.
	ProbeWordlist
)

// maxTypoPath bounds the paths compared by edit distance (attacker text; the distance is
// quadratic): longer ones are never typos.
const maxTypoPath = 160

// ClassifyProbe says what the unknown path p is, given the paths known to be real (the
// site's traps, the links its decoys showed the session). Case, a trailing slash and an
// optimal-string-alignment Damerau–Levenshtein distance of 1 (paths under 8 bytes) or 2
// make a typo, as does a truncated known path of 8 bytes or more.
func ClassifyProbe(p string, known ...[]string) ProbeClass {
	lp := strings.TrimRight(strings.ToLower(p), "/")
	for _, list := range known {
		for _, k := range list {
			if isTypoOf(lp, k) {
				return ProbeTypo
			}
		}
	}
	if wordlistLike(lp) {
		return ProbeWordlist
	}
	return ProbeUnknown
}

// isTypoOf reports whether lp (lowered, without trailing slashes) is known or a near
// miss of it. The same path is always its own typo (the root, "/", included); only the
// edit distance is bounded, since lowering can lengthen a path of non-ASCII letters.
func isTypoOf(lp, known string) bool {
	k := strings.TrimRight(strings.ToLower(known), "/")
	if lp == k {
		return true
	}
	if k == "" || len(k) > maxTypoPath || len(lp) > maxTypoPath {
		return false
	}
	if len(lp) >= 8 && strings.HasPrefix(k, lp) {
		return true
	}
	d := len(lp) - len(k)
	allowed := 2
	if len(k) < 8 {
		allowed = 1
	}
	if d > allowed || -d > allowed {
		return false
	}
	return edlib.OSADamerauLevenshteinDistance(lp, k) <= allowed
}

// wordlistSegments are path segments scanners' wordlists try and people do not type.
var wordlistSegments = map[string]bool{
	".env": true, ".git": true, ".svn": true, ".hg": true, ".bzr": true, ".aws": true, ".ssh": true, ".docker": true,
	".htaccess": true, ".htpasswd": true, ".ds_store": true, ".idea": true, ".vscode": true, ".npmrc": true,
	".bash_history": true, ".kube": true, ".terraform": true, "wp-admin": true, "wp-login.php": true, "wp-content": true,
	"wp-includes": true, "wp-config.php": true, "xmlrpc.php": true, "wordpress": true, "phpmyadmin": true, "pma": true,
	"myadmin": true, "phpinfo.php": true, "info.php": true, "server-status": true, "server-info": true, "actuator": true,
	"cgi-bin": true, "config.php": true, "configuration.php": true, "web.config": true, "administrator": true,
	"admin.php": true, "shell.php": true, "telescope": true, "_profiler": true, "solr": true, "jenkins": true,
	"owa": true, "autodiscover": true, "boaform": true, "hnap1": true, "druid": true, "vendor": true, "etc": true,
	"passwd": true, "win.ini": true, "admin": true, "backup": true, "backups": true, "dump": true, "sql": true,
	"debug": true, "console": true, "manager": true, "setup.php": true, "install.php": true, "credentials": true,
	"id_rsa": true, "docker-compose.yml": true, "config.json": true, "secrets": true,
}

// wordlistSuffixes are file endings scanners try: scripts of other stacks, backups, dumps.
var wordlistSuffixes = []string{".php", ".asp", ".aspx", ".jsp", ".cgi", ".bak", ".old", ".orig", ".sql", ".swp",
	".zip", ".tar", ".tar.gz", ".tgz", ".rar", ".7z", ".gz", "~", ".save", ".log", ".db", ".sqlite", ".yml", ".ini"}

func wordlistLike(lp string) bool {
	if strings.Contains(lp, "..") || strings.Contains(lp, "%2e") {
		return true // path traversal
	}
	for _, seg := range strings.Split(lp, "/") {
		if seg == "" {
			continue
		}
		if wordlistSegments[seg] || strings.HasPrefix(seg, ".env") || strings.HasPrefix(seg, ".git") {
			return true
		}
		for _, s := range wordlistSuffixes {
			if strings.HasSuffix(seg, s) {
				return true
			}
		}
	}
	return false
}

// ProbeCounts reports whether an unknown path a client asked for counts toward
// SYSTEMATIC_PROBING: never a typo; for a browser (a user agent on no list), only a
// wordlist path, since people mistype and follow stale links; for anything else, any path.
func ProbeCounts(p, ua string, known ...[]string) bool {
	switch ClassifyProbe(p, known...) {
	case ProbeWordlist:
		return true
	case ProbeUnknown:
		return LookupUA(ua).Kind != KindUnknown
	}
	return false
}

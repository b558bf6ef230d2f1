package detect

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/detect/internal/uatok"
)

// uaCases are real user-agent strings, as sent, for each kind.
var uaCases = []struct {
	ua       string
	kind     Kind
	name     string // "" = don't care
	operator string // "" = don't care
}{
	// AI agents, assistants, search and training crawlers (ai.robots.txt).
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", KindAICrawler, "GPTBot", "OpenAI"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", KindAIAssistant, "ChatGPT-User", "OpenAI"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot", KindAISearch, "OAI-SearchBot", "OpenAI"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", KindAICrawler, "ClaudeBot", "Anthropic"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)", KindAIAssistant, "Claude-User", "Anthropic"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-SearchBot/1.0; +Claude-SearchBot@anthropic.com)", KindAISearch, "Claude-SearchBot", "Anthropic"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", KindAISearch, "PerplexityBot", "Perplexity"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)", KindAIAssistant, "Perplexity-User", "Perplexity"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)", KindAIAssistant, "MistralAI-User", ""},
	{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.175 Mobile Safari/537.36 (compatible; GoogleOther)", KindAICrawler, "GoogleOther", "Google"},
	{"Mozilla/5.0 (compatible; Google-CloudVertexBot; +https://cloud.google.com/enterprise-search)", KindAICrawler, "Google-CloudVertexBot", "Google"},
	{"Google-Extended", KindAICrawler, "Google-Extended", "Google"},
	{"Mozilla/5.0 (compatible; Applebot-Extended/0.1)", KindAICrawler, "Applebot-Extended", "Apple"},
	{"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)", KindAICrawler, "Bytespider", "ByteDance"},
	{"CCBot/2.0 (https://commoncrawl.org/faq/)", KindAICrawler, "CCBot", "Common Crawl Foundation"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)", KindAICrawler, "Amazonbot", "Amazon"},
	{"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", KindAICrawler, "meta-externalagent", "Meta"},
	{"DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)", KindAIAssistant, "DuckAssistBot", ""},
	{"Mozilla/5.0 (compatible;PetalBot;+https://webmaster.petalsearch.com/site/petalbot)", KindAISearch, "PetalBot", "Huawei"},
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Manus-User/1.0", KindAIAgent, "Manus-User", "Butterfly Effect"},
	{"Mozilla/5.0 (compatible; ChatGPT Agent; +https://openai.com/bot)", KindAIAgent, "ChatGPT Agent", "OpenAI"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Cursor/0.48.6 Chrome/132.0.6834.210 Electron/34.3.4 Safari/537.36", KindAIAgent, "Cursor", ""},
	{"claude-code/1.0.51 (external, cli)", KindAIAgent, "Claude-Code", ""},
	{"iaskspider/2.0(+https://iask.ai)", KindAIAgent, "iaskspider", "iAsk"},
	{"Mozilla/5.0 (compatible; Linguee Bot/1.0)", KindAICrawler, "Linguee Bot", "Linguee"},

	// Link previewers: their own kind, never AI (facebookexternalhit overrides ai.robots.txt).
	{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", KindLinkPreview, "facebookexternalhit", "Meta"},
	{"facebookexternalhit/1.1", KindLinkPreview, "facebookexternalhit", "Meta"},
	{"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", KindLinkPreview, "Slackbot-LinkExpanding", "Slack"},
	{"WhatsApp/2.23.20.0 A", KindLinkPreview, "WhatsApp", "Meta"},
	{"WhatsApp/2.2407.3 i", KindLinkPreview, "WhatsApp", "Meta"},
	{"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", KindLinkPreview, "LinkedInBot", "LinkedIn"},
	{"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", KindLinkPreview, "Discordbot", "Discord"},
	{"Twitterbot/1.0", KindLinkPreview, "Twitterbot", "X"},
	{"TelegramBot (like TwitterBot)", KindLinkPreview, "TelegramBot", "Telegram"},

	// Search engines.
	{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", KindSearchCrawler, "Googlebot", "Google"},
	{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.175 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", KindSearchCrawler, "Googlebot", "Google"},
	{"Googlebot-Image/1.0", KindSearchCrawler, "Googlebot", "Google"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", KindSearchCrawler, "bingbot", "Microsoft"},
	{"DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", KindSearchCrawler, "DuckDuckBot", "DuckDuckGo"},
	{"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", KindSearchCrawler, "YandexBot", "Yandex"},
	{"Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", KindSearchCrawler, "Baiduspider", "Baidu"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", KindSearchCrawler, "Applebot", "Apple"},
	{"Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)", KindSearchCrawler, "Slurp", "Yahoo"},
	{"Mozilla/5.0 (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)", KindSearchCrawler, "SeznamBot", ""},
	{"Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)", KindSearchCrawler, "Sogou", ""},

	// HTTP clients and automation.
	{"curl/8.5.0", KindAutomation, "curl", ""},
	{"Wget/1.21.4", KindAutomation, "Wget", ""},
	{"python-requests/2.31.0", KindAutomation, "python-requests", ""},
	{"Python-urllib/3.11", KindAutomation, "python-urllib", ""},
	{"python-httpx/0.27.0", KindAutomation, "httpx", ""},
	{"Python/3.11 aiohttp/3.9.3", KindAutomation, "aiohttp", ""},
	{"Go-http-client/1.1", KindAutomation, "Go-http-client", ""},
	{"Go-http-client/2.0", KindAutomation, "Go-http-client", ""},
	{"axios/1.6.7", KindAutomation, "axios", ""},
	{"node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", KindAutomation, "node-fetch", ""},
	{"undici", KindAutomation, "undici", ""},
	{"node", KindAutomation, "Node.js", ""},
	{"okhttp/4.12.0", KindAutomation, "okhttp", ""},
	{"Java/17.0.8", KindAutomation, "Java", ""},
	{"Java-http-client/21.0.1", KindAutomation, "Java/HttpClient", ""},
	{"Apache-HttpClient/4.5.14 (Java/17.0.8)", KindAutomation, "Java/HttpClient", ""},
	{"libwww-perl/6.72", KindAutomation, "libwww-perl", ""},
	{"Scrapy/2.11.0 (+https://scrapy.org)", KindAutomation, "Scrapy", "Zyte"},
	{"PostmanRuntime/7.36.3", KindAutomation, "PostmanRuntime", "Postman"},
	{"HTTPie/3.2.2", KindAutomation, "HTTPie", ""},
	{"got (https://github.com/sindresorhus/got)", KindAutomation, "got", ""},
	{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", KindAutomation, "AhrefsBot", ""},
	{"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", KindAutomation, "SemrushBot", ""},
	{"Mozilla/5.0", KindAutomation, "Mozilla (bare)", ""},

	// Headless browsers.
	{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.6367.60 Safari/537.36", KindHeadless, "HeadlessChrome", ""},
	{"Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1", KindHeadless, "PhantomJS", ""},
	{"Mozilla/5.0 (linux) AppleWebKit/537.36 (KHTML, like Gecko) jsdom/24.0.0", KindHeadless, "jsdom", ""},
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Playwright/1.45.0", KindHeadless, "Playwright", ""},

	// Scanners.
	{"sqlmap/1.8.2#stable (https://sqlmap.org)", KindScanner, "sqlmap", ""},
	{"Mozilla/5.0 (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)", KindScanner, "Nmap", ""},
	{"Mozilla/5.00 (Nikto/2.5.0) (Evasions:None) (Test:000562)", KindScanner, "Nikto", ""},
	{"Mozilla/5.0 zgrab/0.x", KindScanner, "zgrab", ""},
	{"masscan/1.3 (https://github.com/robertdavidgraham/masscan)", KindScanner, "masscan", ""},
	{"WPScan v3.8.25 (https://wpscan.com/wordpress-security-scanner)", KindScanner, "WPScan", ""},
	{"gobuster/3.6", KindScanner, "gobuster", ""},
	{"Fuzz Faster U Fool v2.1.0-dev", KindScanner, "ffuf", ""},
	{"feroxbuster/2.10.2", KindScanner, "feroxbuster", ""},
	{"DirBuster-1.0-RC1 (http://www.owasp.org/index.php/Category:OWASP_DirBuster_Project)", KindScanner, "DirBuster", "OWASP"},
	{"Nuclei - Open-source project (github.com/projectdiscovery/nuclei)", KindScanner, "nuclei", ""},
	{"Mozilla/5.0 (compatible; CensysInspect/1.1; +https://about.censys.io/)", KindScanner, "CensysInspect", "Censys"},
	{"Expanse, a Palo Alto Networks company, searches across the global IPv4 space multiple times per day to identify customers' presences on the Internet.", KindScanner, "Expanse", ""},
	{"Mozilla/5.0 (Windows NT 6.1) acunetix_wvs_security_test", KindScanner, "Acunetix", ""},

	// Precedence when a user agent names several: AI > scanner > search > headless > automation.
	{"Mozilla/5.0 (compatible; Googlebot/2.1) sqlmap/1.7", KindScanner, "sqlmap", ""},
	{"GPTBot/1.0 nuclei", KindAICrawler, "GPTBot", ""},
	{"HeadlessChrome/120.0 python-requests/2.31", KindHeadless, "HeadlessChrome", ""},
	{"Mozilla/5.0 (compatible; Googlebot/2.1) HeadlessChrome/120.0", KindSearchCrawler, "Googlebot", ""},
	{"curl/8.0 Code/1.90", KindAutomation, "curl", ""}, // a strong name beats an ordinary word

	// Case-insensitive.
	{"gptbot/1.1", KindAICrawler, "GPTBot", ""},
	{"GOOGLEBOT/2.1", KindSearchCrawler, "Googlebot", ""},
	{"CURL/7.88.1", KindAutomation, "curl", ""},

	// Browsers, desktop and mobile: unknown.
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", KindUnknown, "", ""},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", KindUnknown, "", ""},
	{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", KindUnknown, "", ""},
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0", KindUnknown, "", ""},
	{"Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0", KindUnknown, "", ""},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:127.0) Gecko/20100101 Firefox/127.0", KindUnknown, "", ""},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15", KindUnknown, "", ""},
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68", KindUnknown, "", ""},
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 OPR/111.0.0.0", KindUnknown, "", ""},
	{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", KindUnknown, "", ""},
	{"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", KindUnknown, "", ""},
	{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1", KindUnknown, "", ""},
	{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/127.0 Mobile/15E148 Safari/605.1.15", KindUnknown, "", ""},
	{"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.122 Mobile Safari/537.36", KindUnknown, "", ""},
	{"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36 EdgA/126.0.2592.80", KindUnknown, "", ""},
	{"Mozilla/5.0 (Android 14; Mobile; rv:127.0) Gecko/127.0 Firefox/127.0", KindUnknown, "", ""},
	{"Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36", KindUnknown, "", ""},
	{"Mozilla/5.0 (Linux; Android 10; CUBOT X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36", KindUnknown, "", ""},
	{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/468.0.0.50.106;FBBV/640000000;FBDV/iPhone15,3;FBMD/iPhone;FBSN/iOS;FBSV/17.5;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5]", KindUnknown, "", ""},
	{"Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240605.024; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/126.0.6478.71 Mobile Safari/537.36 Instagram 337.0.0.35.102 Android", KindUnknown, "", ""},
	{"Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko", KindUnknown, "", ""},

	// On no list and not browser-shaped: automation, named by its first token.
	{"acme-sync/2.4 (internal)", KindAutomation, "acme-sync", ""},
	{"MyCompanyMonitor", KindAutomation, "MyCompanyMonitor", ""},
	{"Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/AP2A.240605.024)", KindAutomation, "Dalvik", ""},
	{"Mozilla/5.0 MyTool", KindAutomation, "Mozilla", ""},
	{"Mozilla/ (X11)", KindAutomation, "Mozilla", ""},
	{"Opera/9.80 (Windows NT 6.1; WOW64) Presto/2.12.388 Version/12.18", KindUnknown, "", ""},
	{"mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", KindUnknown, "", ""},

	// Nothing at all.
	{"", KindEmpty, "", ""},
	{"   ", KindEmpty, "", ""},
	{"-", KindEmpty, "", ""},
}

func TestLookupUA(t *testing.T) {
	for _, c := range uaCases {
		got := LookupUA(c.ua)
		if got.Kind != c.kind {
			t.Errorf("LookupUA(%q).Kind = %v (%q), want %v", c.ua, got.Kind, got.Name, c.kind)
			continue
		}
		if c.name != "" && got.Name != c.name {
			t.Errorf("LookupUA(%q).Name = %q, want %q", c.ua, got.Name, c.name)
		}
		if c.operator != "" && got.Operator != c.operator {
			t.Errorf("LookupUA(%q).Operator = %q, want %q", c.ua, got.Operator, c.operator)
		}
		wantCat := c.kind.String()
		if c.kind == KindUnknown {
			wantCat = ""
		}
		if got.Category != wantCat {
			t.Errorf("LookupUA(%q).Category = %q, want %q", c.ua, got.Category, wantCat)
		}
	}
}

func TestLookupUABoundsInput(t *testing.T) {
	long := "Mozilla/5.0 (Windows NT 10.0) " + strings.Repeat("x", 2*MaxUALength) + " GPTBot/1.0"
	if got := LookupUA(long); got.Kind != KindUnknown {
		t.Errorf("a name beyond %d bytes must be ignored, got %v %q", MaxUALength, got.Kind, got.Name)
	}
	head := "GPTBot/1.0 " + strings.Repeat("a ", MaxUALength)
	if got := LookupUA(head); got.Name != "GPTBot" {
		t.Errorf("a name within the bound must be found in a long user agent, got %+v", got)
	}
	// A name cut by the bound is not recognised by its prefix.
	cut := strings.Repeat(" ", MaxUALength-3) + "GPTBot"
	if got := LookupUA(cut); got.Kind.IsAI() || got.Name == "GPTBot" {
		t.Errorf("cut name %q matched %+v", cut[MaxUALength-3:MaxUALength], got)
	}
}

func TestLookupUAWeakNames(t *testing.T) {
	cases := []struct {
		ua   string
		kind Kind
	}{
		{"Code/1.90.0", KindAIAgent},               // product token
		{"Operator", KindAIAgent},                  // the whole user agent
		{"Mozilla/5.0 (operator; x)", KindUnknown}, // an ordinary word elsewhere
		{"Ruby", KindAutomation},
		{"Mozilla/5.0 (compatible; ruby gem fetcher)", KindUnknown},
		{"Mozilla/5.0 (X11) spider", KindUnknown},
	}
	for _, c := range cases {
		if got := LookupUA(c.ua); got.Kind != c.kind {
			t.Errorf("LookupUA(%q) = %v %q, want %v", c.ua, got.Kind, got.Name, c.kind)
		}
	}
}

// Every ai.robots.txt name, sent as a product token, is recognised as itself
// (or as the built-in that deliberately replaces it).
func TestEveryGeneratedAgentMatchesItself(t *testing.T) {
	var f agentFile
	if err := json.Unmarshal(agentsJSON, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Agents) < 150 || f.Commit != "738c80d" || f.Date != "2026-08-22" {
		t.Fatalf("agents.json: %d agents, commit %q, date %q", len(f.Agents), f.Commit, f.Date)
	}
	for _, a := range f.Agents {
		got := LookupUA("Mozilla/5.0 (compatible; " + a.Name + "/1.0)")
		if overriddenByBuiltin[a.Match] {
			if got.Kind.IsAI() {
				t.Errorf("%s: built-in override not applied: %+v", a.Name, got)
			}
			continue
		}
		if weakAINames[a.Match] {
			got = LookupUA(a.Name + "/1.0")
		}
		if got.Name != a.Name || got.Category != a.Category || got.Operator != a.Operator {
			t.Errorf("%s: got %+v, want category %s operator %q", a.Name, got, a.Category, a.Operator)
		}
	}
	if len(uaIdx.overridden) != len(overriddenByBuiltin) {
		t.Errorf("built-ins replaced %v, expected exactly %v: decide on the new collision", uaIdx.overridden, overriddenByBuiltin)
	}
	for k := range uaIdx.overridden {
		if !overriddenByBuiltin[k] {
			t.Errorf("built-in unexpectedly replaces ai.robots.txt entry %q", k)
		}
	}
}

func TestEveryBuiltinMatchesItself(t *testing.T) {
	for _, b := range builtinAgents {
		for _, m := range b.match {
			got := LookupUA(m + "/1.0")
			if got.Kind != b.kind || got.Name != b.name {
				t.Errorf("built-in %q (%s): LookupUA = %+v", m, b.name, got)
			}
		}
	}
}

func TestAgentsJSONCategoriesAreNormalised(t *testing.T) {
	var f agentFile
	if err := json.Unmarshal(agentsJSON, &f); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range f.Agents {
		if _, ok := aiKinds[a.Category]; !ok {
			t.Errorf("%s: category %q", a.Name, a.Category)
		}
		if strings.Contains(a.Operator, "](") || strings.Contains(a.Operator, "Unclear") {
			t.Errorf("%s: operator not cleaned: %q", a.Name, a.Operator)
		}
		if got := strings.Join(uatok.Tokens(a.Name), " "); got != a.Match && !strings.HasPrefix(got, a.Match) {
			t.Errorf("%s: match %q does not tokenise from the name (%q)", a.Name, a.Match, got)
		}
		if seen[a.Match] {
			t.Errorf("duplicate match %q", a.Match)
		}
		seen[a.Match] = true
	}
	want := map[string]string{
		"ChatGPT Agent": "ai_agent", "Claude-Code": "ai_agent", "Crawl4AI": "ai_agent",
		"ChatGPT-User": "ai_assistant", "Claude-User": "ai_assistant", "Perplexity-User": "ai_assistant", "cohere-ai": "ai_assistant",
		"OAI-SearchBot": "ai_search", "PerplexityBot": "ai_search", "Claude-SearchBot": "ai_search",
		"GPTBot": "ai_crawler", "ClaudeBot": "ai_crawler", "CCBot": "ai_crawler", "Bytespider": "ai_crawler",
		"LAIONDownloader": "ai_crawler", // "research" is not "search"
	}
	for _, a := range f.Agents {
		if c, ok := want[a.Name]; ok && a.Category != c {
			t.Errorf("%s: category %s, want %s", a.Name, a.Category, c)
		}
	}
}

func TestLookupUADoesNotAllocate(t *testing.T) {
	for _, c := range uaCases {
		if n := testing.AllocsPerRun(20, func() { LookupUA(c.ua) }); n != 0 {
			t.Errorf("LookupUA(%q) allocates %.0f times", c.ua, n)
		}
	}
}

func TestKindString(t *testing.T) {
	want := map[Kind]string{
		KindUnknown: "unknown", KindEmpty: "empty", KindAIAgent: "ai_agent", KindAIAssistant: "ai_assistant",
		KindAISearch: "ai_search", KindAICrawler: "ai_crawler", KindSearchCrawler: "search_crawler",
		KindAutomation: "automation", KindHeadless: "headless", KindScanner: "scanner", Kind(200): "kind(200)",
	}
	for k, s := range want {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), k.String(), s)
		}
	}
}

func TestUnverifiedClaim(t *testing.T) {
	googlebot := LookupUA("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	bingbot := LookupUA("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)")
	applebot := LookupUA("Mozilla/5.0 (Applebot/0.1; +http://www.apple.com/go/applebot)")
	ddg := LookupUA("DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)")
	gptbot := LookupUA("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)")
	searchbot := LookupUA("OAI-SearchBot/1.0; +https://openai.com/searchbot")
	pplx := LookupUA("PerplexityBot/1.0")
	claudebot := LookupUA("ClaudeBot/1.0")
	chrome := LookupUA("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")

	cases := []struct {
		a    Agent
		addr string
		want bool
	}{
		{googlebot, "66.249.66.1", false},
		{googlebot, "66.249.79.200", false},
		{googlebot, "::ffff:66.249.66.1", false},
		{googlebot, "2001:4860:4801:10::1", false},
		{googlebot, "203.0.113.5", true},
		{googlebot, "8.8.8.8", true},
		{googlebot, "127.0.0.1", true},
		{googlebot, "10.1.2.3", true},
		{googlebot, "192.168.1.10", true},
		{googlebot, "::1", true},
		{googlebot, "fe80::1%eth0", true},
		{bingbot, "157.55.39.10", false},
		{bingbot, "207.46.13.1", false},
		{bingbot, "40.77.167.5", false},
		{bingbot, "66.249.66.1", true},
		{applebot, "17.58.101.5", false},
		{applebot, "18.0.0.1", true},
		{ddg, "20.191.45.212", false},
		{ddg, "20.191.45.213", true},
		{gptbot, "20.171.206.5", false},
		{gptbot, "52.230.152.77", false},
		{gptbot, "45.33.1.1", true},
		{searchbot, "51.8.102.9", false},
		{searchbot, "1.1.1.1", true},
		{pplx, "18.97.9.100", false},
		{pplx, "18.97.9.200", true},
		{claudebot, "1.2.3.4", false}, // Anthropic publishes no ranges: nothing to check
		{chrome, "1.2.3.4", false},
		{Agent{}, "1.2.3.4", false},
	}
	for _, c := range cases {
		addr, err := netip.ParseAddr(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := UnverifiedClaim(c.a, addr); got != c.want {
			t.Errorf("UnverifiedClaim(%s, %s) = %v, want %v", c.a.Name, c.addr, got, c.want)
		}
	}
	if !UnverifiedClaim(googlebot, netip.Addr{}) {
		t.Error("an invalid address must not back a claim")
	}
	if UnverifiedClaim(Agent{Name: strings.ToUpper("googlebot")}, netip.MustParseAddr("66.249.66.1")) {
		t.Error("names are compared case-insensitively")
	}
}

func TestCrawlerRangesNamesAreKnownAgents(t *testing.T) {
	known := map[string]bool{}
	for _, a := range uaIdx.agents {
		known[strings.ToLower(a.Name)] = true
	}
	byAgent := Ranges().byAgent
	for name, l := range byAgent {
		if !known[name] {
			t.Errorf("crawler-ranges.json names %q, which LookupUA never returns", name)
		}
		if len(l.Prefixes) == 0 || l.AsOf.IsZero() {
			t.Errorf("%s: no prefixes or no date", name)
		}
	}
	for _, must := range []string{"googlebot", "bingbot", "applebot", "duckduckbot", "gptbot", "perplexitybot"} {
		if _, ok := byAgent[must]; !ok {
			t.Errorf("no ranges for %s", must)
		}
	}
	for name := range DNSAgents() {
		if !known[name] {
			t.Errorf("the reverse DNS table names %q, which LookupUA never returns", name)
		}
	}
}

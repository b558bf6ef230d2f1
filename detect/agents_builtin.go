package detect

// Built-in user-agent knowledge that ai.robots.txt does not cover: search
// engines, HTTP clients and automation frameworks, headless browsers and
// security scanners. Each entry names the tokens its user agent carries as
// written in real user-agent strings; they are tokenised with the same rule
// as the user agents themselves (see internal/uatok), and a name with spaces
// ("Fuzz Faster U Fool") matches those tokens in sequence.
//
// A weak entry is an ordinary word ("node", "ruby", "yeti"). It counts only
// as a product token ("node/20.1", or the whole user agent) and only when no
// other, specific name matched.
//
// Three built-ins deliberately replace an ai.robots.txt entry with the same
// token (see overriddenByBuiltin): Applebot is Apple's search crawler (its AI
// use has its own token, Applebot-Extended), Scrapy is a general crawling
// framework whose default user agent says nothing about AI, and
// facebookexternalhit is Meta's link previewer.

type builtin struct {
	kind     Kind
	name     string
	operator string
	match    []string // user-agent spellings; any one matches
	weak     bool
}

var builtinAgents = []builtin{
	// Search-engine crawlers. Names that UnverifiedClaim can check against
	// published ranges must equal the "names" in data/crawler-ranges.json.
	{kind: KindSearchCrawler, name: "Googlebot", operator: "Google",
		match: []string{"Googlebot", "Googlebot-Image", "Googlebot-News", "Googlebot-Video", "Googlebot-Mobile"}},
	{kind: KindSearchCrawler, name: "Storebot-Google", operator: "Google", match: []string{"Storebot-Google"}},
	{kind: KindSearchCrawler, name: "Google-InspectionTool", operator: "Google", match: []string{"Google-InspectionTool"}},
	{kind: KindSearchCrawler, name: "AdsBot-Google", operator: "Google", match: []string{"AdsBot-Google", "AdsBot-Google-Mobile"}},
	{kind: KindSearchCrawler, name: "Mediapartners-Google", operator: "Google", match: []string{"Mediapartners-Google"}},
	{kind: KindSearchCrawler, name: "APIs-Google", operator: "Google", match: []string{"APIs-Google"}},
	{kind: KindSearchCrawler, name: "FeedFetcher-Google", operator: "Google", match: []string{"FeedFetcher-Google"}},
	{kind: KindSearchCrawler, name: "bingbot", operator: "Microsoft", match: []string{"bingbot"}},
	{kind: KindSearchCrawler, name: "BingPreview", operator: "Microsoft", match: []string{"BingPreview"}},
	{kind: KindSearchCrawler, name: "msnbot", operator: "Microsoft", match: []string{"msnbot", "msnbot-media"}},
	{kind: KindSearchCrawler, name: "AdIdxBot", operator: "Microsoft", match: []string{"adidxbot"}},
	{kind: KindSearchCrawler, name: "DuckDuckBot", operator: "DuckDuckGo", match: []string{"DuckDuckBot", "DuckDuckBot-Https"}},
	{kind: KindSearchCrawler, name: "DuckDuckGo-Favicons-Bot", operator: "DuckDuckGo", match: []string{"DuckDuckGo-Favicons-Bot"}},
	{kind: KindSearchCrawler, name: "YandexBot", operator: "Yandex",
		match: []string{"YandexBot", "YandexImages", "YandexMobileBot", "YandexVideo", "YandexNews", "YandexRenderResourcesBot", "YandexAccessibilityBot"}},
	{kind: KindSearchCrawler, name: "Baiduspider", operator: "Baidu", match: []string{"Baiduspider", "Baiduspider-image", "Baiduspider-render"}},
	{kind: KindSearchCrawler, name: "Applebot", operator: "Apple", match: []string{"Applebot"}},
	{kind: KindSearchCrawler, name: "Slurp", operator: "Yahoo", match: []string{"Slurp", "Yahoo! Slurp"}},
	{kind: KindSearchCrawler, name: "SeznamBot", operator: "Seznam.cz", match: []string{"SeznamBot"}},
	{kind: KindSearchCrawler, name: "Sogou", operator: "Sogou", match: []string{"Sogou web spider", "Sogou inst spider", "Sogou"}},
	{kind: KindSearchCrawler, name: "Qwantbot", operator: "Qwant", match: []string{"Qwantbot", "Qwantify"}},
	{kind: KindSearchCrawler, name: "MojeekBot", operator: "Mojeek", match: []string{"MojeekBot"}},
	{kind: KindSearchCrawler, name: "coccocbot", operator: "Coc Coc", match: []string{"coccocbot", "coccocbot-web", "coccocbot-image"}},
	{kind: KindSearchCrawler, name: "Yeti", operator: "Naver", match: []string{"Yeti"}, weak: true},
	{kind: KindSearchCrawler, name: "NaverBot", operator: "Naver", match: []string{"NaverBot"}},
	{kind: KindSearchCrawler, name: "Daumoa", operator: "Kakao", match: []string{"Daumoa"}},
	{kind: KindSearchCrawler, name: "360Spider", operator: "Qihoo 360", match: []string{"360Spider", "HaosouSpider"}},
	{kind: KindSearchCrawler, name: "YisouSpider", operator: "Alibaba", match: []string{"YisouSpider"}},

	// Link previewers: a chat or social app fetching a link someone shared, to show
	// its title and image. Never AI (facebookexternalhit replaces the ai.robots.txt
	// entry that calls it an AI crawler: Meta documents it as its sharing fetcher and
	// uses meta-externalagent and FacebookBot for AI).
	{kind: KindLinkPreview, name: "facebookexternalhit", operator: "Meta", match: []string{"facebookexternalhit", "facebookcatalog"}},
	{kind: KindLinkPreview, name: "Slackbot-LinkExpanding", operator: "Slack", match: []string{"Slackbot-LinkExpanding", "Slack-ImgProxy"}},
	{kind: KindLinkPreview, name: "WhatsApp", operator: "Meta", match: []string{"WhatsApp"}},
	{kind: KindLinkPreview, name: "LinkedInBot", operator: "LinkedIn", match: []string{"LinkedInBot"}},
	{kind: KindLinkPreview, name: "Discordbot", operator: "Discord", match: []string{"Discordbot"}},
	{kind: KindLinkPreview, name: "Twitterbot", operator: "X", match: []string{"Twitterbot"}},
	{kind: KindLinkPreview, name: "TelegramBot", operator: "Telegram", match: []string{"TelegramBot"}},

	// HTTP client libraries, command-line tools and crawling frameworks.
	{kind: KindAutomation, name: "curl", match: []string{"curl", "PycURL"}},
	{kind: KindAutomation, name: "Wget", match: []string{"Wget"}},
	{kind: KindAutomation, name: "python-requests", match: []string{"python-requests"}},
	{kind: KindAutomation, name: "python-urllib", match: []string{"Python-urllib", "python-urllib3", "urllib3"}},
	{kind: KindAutomation, name: "httpx", match: []string{"python-httpx", "httpx"}},
	{kind: KindAutomation, name: "aiohttp", match: []string{"aiohttp"}},
	{kind: KindAutomation, name: "Go-http-client", match: []string{"Go-http-client", "fasthttp", "colly"}},
	{kind: KindAutomation, name: "axios", match: []string{"axios"}},
	{kind: KindAutomation, name: "node-fetch", match: []string{"node-fetch"}},
	{kind: KindAutomation, name: "undici", match: []string{"undici"}},
	{kind: KindAutomation, name: "Node.js", match: []string{"node", "Deno", "Bun"}, weak: true},
	{kind: KindAutomation, name: "got", match: []string{"got"}, weak: true},
	{kind: KindAutomation, name: "superagent", match: []string{"superagent", "needle"}},
	{kind: KindAutomation, name: "okhttp", match: []string{"okhttp"}},
	{kind: KindAutomation, name: "Java/HttpClient", match: []string{"Java-http-client", "Apache-HttpClient", "Commons-HttpClient", "Jetty"}},
	{kind: KindAutomation, name: "Java", match: []string{"Java"}, weak: true},
	{kind: KindAutomation, name: "libwww-perl", match: []string{"libwww-perl", "lwp-trivial", "LWP", "WWW-Mechanize", "Mechanize"}},
	{kind: KindAutomation, name: "Scrapy", operator: "Zyte", match: []string{"Scrapy"}},
	{kind: KindAutomation, name: "PostmanRuntime", operator: "Postman", match: []string{"PostmanRuntime"}},
	{kind: KindAutomation, name: "insomnia", match: []string{"insomnia"}},
	{kind: KindAutomation, name: "HTTPie", match: []string{"HTTPie"}},
	{kind: KindAutomation, name: "Ruby", match: []string{"Ruby", "Faraday", "rest-client", "Typhoeus", "http.rb"}, weak: true},
	{kind: KindAutomation, name: "GuzzleHttp", match: []string{"GuzzleHttp"}},
	{kind: KindAutomation, name: "PHP", match: []string{"PHP"}, weak: true},
	{kind: KindAutomation, name: "PowerShell", operator: "Microsoft", match: []string{"WindowsPowerShell", "PowerShell"}},
	{kind: KindAutomation, name: "WinHttp", operator: "Microsoft", match: []string{"WinHttp", "WinHttpRequest"}},
	{kind: KindAutomation, name: "reqwest", match: []string{"reqwest"}},
	{kind: KindAutomation, name: "Dart", match: []string{"Dart"}, weak: true},
	{kind: KindAutomation, name: "Apache Nutch", match: []string{"Nutch", "Apache Nutch"}},
	{kind: KindAutomation, name: "Heritrix", match: []string{"heritrix"}},
	{kind: KindAutomation, name: "WordPress", match: []string{"WordPress"}, weak: true},

	// Headless and automated browsers.
	{kind: KindHeadless, name: "HeadlessChrome", match: []string{"HeadlessChrome"}},
	{kind: KindHeadless, name: "PhantomJS", match: []string{"PhantomJS"}},
	{kind: KindHeadless, name: "Puppeteer", match: []string{"Puppeteer"}},
	{kind: KindHeadless, name: "Playwright", operator: "Microsoft", match: []string{"Playwright"}},
	{kind: KindHeadless, name: "Selenium", match: []string{"Selenium", "WebDriver", "chromedriver", "geckodriver"}},
	{kind: KindHeadless, name: "SlimerJS", match: []string{"SlimerJS"}},
	{kind: KindHeadless, name: "HtmlUnit", match: []string{"HtmlUnit"}},
	{kind: KindHeadless, name: "jsdom", match: []string{"jsdom"}},
	{kind: KindHeadless, name: "Cypress", match: []string{"Cypress"}},
	{kind: KindHeadless, name: "Chrome-Lighthouse", operator: "Google", match: []string{"Chrome-Lighthouse"}},

	// Vulnerability scanners, fuzzers and internet-wide scanners.
	{kind: KindScanner, name: "Nmap", match: []string{"Nmap", "Nmap Scripting Engine"}},
	{kind: KindScanner, name: "sqlmap", match: []string{"sqlmap"}},
	{kind: KindScanner, name: "Nikto", match: []string{"Nikto"}},
	{kind: KindScanner, name: "nuclei", operator: "ProjectDiscovery", match: []string{"nuclei"}},
	{kind: KindScanner, name: "zgrab", match: []string{"zgrab", "zgrab2"}},
	{kind: KindScanner, name: "masscan", match: []string{"masscan", "masscan-ng"}},
	{kind: KindScanner, name: "WPScan", match: []string{"WPScan"}},
	{kind: KindScanner, name: "gobuster", match: []string{"gobuster"}},
	{kind: KindScanner, name: "DirBuster", operator: "OWASP", match: []string{"DirBuster", "dirb"}},
	{kind: KindScanner, name: "ffuf", match: []string{"ffuf", "Fuzz Faster U Fool"}},
	{kind: KindScanner, name: "feroxbuster", match: []string{"feroxbuster"}},
	{kind: KindScanner, name: "wfuzz", match: []string{"wfuzz"}},
	{kind: KindScanner, name: "Acunetix", operator: "Invicti", match: []string{"Acunetix"}},
	{kind: KindScanner, name: "Netsparker", operator: "Invicti", match: []string{"Netsparker", "Invicti"}},
	{kind: KindScanner, name: "Nessus", operator: "Tenable", match: []string{"Nessus"}},
	{kind: KindScanner, name: "OpenVAS", operator: "Greenbone", match: []string{"OpenVAS", "OpenVAS-VT"}},
	{kind: KindScanner, name: "OWASP ZAP", operator: "OWASP", match: []string{"OWASP ZAP", "ZAP"}, weak: true},
	{kind: KindScanner, name: "w3af", match: []string{"w3af", "w3af.org"}},
	{kind: KindScanner, name: "Arachni", match: []string{"Arachni"}},
	{kind: KindScanner, name: "skipfish", match: []string{"skipfish"}},
	{kind: KindScanner, name: "WhatWeb", match: []string{"WhatWeb"}},
	{kind: KindScanner, name: "commix", match: []string{"commix"}},
	{kind: KindScanner, name: "JoomScan", match: []string{"JoomScan", "droopescan"}},
	{kind: KindScanner, name: "CensysInspect", operator: "Censys", match: []string{"CensysInspect"}},
	{kind: KindScanner, name: "Expanse", operator: "Palo Alto Networks", match: []string{"Palo Alto Networks"}},
	{kind: KindScanner, name: "InternetMeasurement", match: []string{"InternetMeasurement"}},
	{kind: KindScanner, name: "LeakIX", operator: "LeakIX", match: []string{"l9explore", "l9tcpid", "LeakIX"}},
	{kind: KindScanner, name: "NetSystemsResearch", match: []string{"NetSystemsResearch"}},
	{kind: KindScanner, name: "ZmEu", match: []string{"ZmEu", "Morfeus", "Jorgee"}},
}

// weakAINames are ai.robots.txt names that are also ordinary words or common
// product names ("Code" is also the token VS Code's Electron shell sends,
// "Spider" appears in several search engines' user agents). They count only
// as product tokens and only when nothing more specific matched.
var weakAINames = map[string]bool{
	"code": true, "cursor": true, "operator": true, "spider": true,
	"devin": true, "trae": true, "lcc": true, "yak": true,
}

// overriddenByBuiltin lists the ai.robots.txt match keys a built-in entry is
// expected to replace. A data refresh that collides with any other built-in
// fails the tests, so each new collision gets a decision.
var overriddenByBuiltin = map[string]bool{"applebot": true, "scrapy": true, "facebookexternalhit": true}

// genericBotExclusions are tokens that look like bot names to the generic
// "…bot / …spider / …crawler" rule but belong to people's devices.
var genericBotExclusions = map[string]bool{
	"cubot": true, // CUBOT phones: "Android 10; CUBOT X30"
}

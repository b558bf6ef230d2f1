package detect

import (
	"regexp"
	"strings"

	"github.com/flytrap/flytrap/internal/clip"
)

// ExtractModel finds the first model name in text and returns it normalised:
// lower case, '-' between parts, dots in versions, no release dates or
// "-latest"/"-preview"/"-instruct" tails. Examples: "GPT-4o mini" →
// "gpt-4o-mini", "claude-3-5-sonnet-20241022" and "Claude 3.5 Sonnet" →
// "claude-3.5-sonnet", "claude-sonnet-4-20250514" → "claude-sonnet-4",
// "Llama-3.1-70B-Instruct" → "llama-3.1-70b", "Qwen2.5-72B-Instruct" →
// "qwen2.5-72b", "DeepSeek-V3-0324" → "deepseek-v3", "Command R+" →
// "command-r-plus". A versioned name anywhere wins over a bare family named
// in an identity phrase ("You are Claude", "powered by Gemini"), which is
// returned as the family ("claude"). "" when none is found.
func ExtractModel(text string) string {
	return extractModel(asciiLower(normalizePrompt(clip.Bytes(text, MaxPromptBytes))))
}

// modelPattern finds one family; norm builds the name from the submatches
// (index 0 is the whole match) and returns "" to reject a match.
type modelPattern struct {
	re   *regexp.Regexp
	norm func(m []string, after string) string
}

var modelPatterns = []modelPattern{
	{regexp.MustCompile(`\bgpt-oss[- ](\d+)b\b`), func(m []string, _ string) string { return "gpt-oss-" + m[1] + "b" }},
	{regexp.MustCompile(`\b(?:chat)?gpt[- ]?(\d+(?:\.\d+)?)(o)?((?:[- ](?:mini|nano|turbo|pro|codex|preview|latest|chat|instruct|\d{4}(?:-\d{2}-\d{2})?))*)`), normGPT},
	{regexp.MustCompile(`\b(o[1-9])(?:-(mini|pro|preview|deep-research))?\b`), nil}, // context-checked in extractModel
	{regexp.MustCompile(`\bclaude[- ]?(?:(\d+)(?:[.-](\d+))?[- ](opus|sonnet|haiku)|(opus|sonnet|haiku|instant)(?:[- ](\d+)(?:[.-](\d+))?)?|(\d+)(?:\.(\d+))?)`), normClaude},
	{regexp.MustCompile(`\bgemini(?:[- ]?(\d+(?:\.\d+)?))?(?:[- ](pro|flash|ultra|nano))?(?:[- ](lite|8b|thinking))?`), normGemini},
	{regexp.MustCompile(`\bllama[- ]?(\d+(?:\.\d+)?)(?:[- ](scout|maverick|behemoth))?(?:[-: ](\d+(?:\.\d+)?)b\b)?`), normLlama},
	{regexp.MustCompile(`\b(mistral|mixtral|codestral|ministral|pixtral|magistral|devstral)(?:[- ](large|medium|small|tiny|nemo|saba|\d+x\d+b|\d+(?:\.\d+)?b))?(?:[- ](\d+(?:\.\d+)?))?`), normMistral},
	{regexp.MustCompile(`\b(qwen|qwq)(?:[- ]?(\d+(?:\.\d+)?))?(?:[- ](max|plus|turbo|coder|vl|math|long|omni))?(?:[-: ](\d+(?:\.\d+)?)b\b)?`), normQwen},
	{regexp.MustCompile(`\bdeepseek[- ]?(v\d+(?:\.\d+)?|r\d+|chat|reasoner|coder(?:[- ]v\d+(?:\.\d+)?)?|math|prover|vl\d*)`), func(m []string, _ string) string {
		return "deepseek-" + strings.ReplaceAll(m[1], " ", "-")
	}},
	{regexp.MustCompile(`\bcommand(?:-(r7b|r\+|r-plus|r|a|light)|[ ](r7b|r\+|r plus|r))(?:[- ]plus)?`), normCommand},
	{regexp.MustCompile(`\bgrok[- ]?(\d+(?:\.\d+)?)(?:[- ](mini|fast|beta|vision|code))?`), func(m []string, _ string) string { return joinModel("grok", m[1], m[2]) }},
	{regexp.MustCompile(`\bgemma[- ]?(\d+(?:\.\d+)?)(?:[-: ](\d+)b\b)?`), func(m []string, _ string) string { return joinModel("gemma", m[1], sizeB(m[2])) }},
	{regexp.MustCompile(`\bphi[- ](\d+(?:\.\d+)?)(?:[- ](mini|small|medium|vision|reasoning))?\b`), func(m []string, _ string) string { return joinModel("phi", m[1], m[2]) }},
	{regexp.MustCompile(`\bkimi[- ]k(\d+(?:\.\d+)?)`), func(m []string, _ string) string { return "kimi-k" + m[1] }},
	{regexp.MustCompile(`\bglm[- ]?(\d+(?:\.\d+)?)`), func(m []string, _ string) string { return "glm-" + m[1] }},
}

// familyIdentity finds a bare family in an identity phrase.
var familyIdentity = regexp.MustCompile(`\b(?:you are|you're|the assistant is|powered by|based on|built on|running on|model:|model is|model name:)\s+(?:the\s+)?(claude|gemini|llama|qwen|deepseek|grok|mistral)\b`)

// oContext: an "o1"/"o3" without suffix counts only right after one of these.
var oContext = []string{"openai", "model", "model:", "by", "on", "using", "with", "is"}

func extractModel(low string) string {
	best, bestAt := "", -1
	for pi, p := range modelPatterns {
		for _, loc := range p.re.FindAllStringSubmatchIndex(low, 8) {
			if bestAt >= 0 && loc[0] >= bestAt {
				break
			}
			m := submatches(low, loc)
			var name string
			if pi == 2 { // o-series
				if m[2] != "" || precededBy(low, loc[0], oContext) {
					name = joinModel(m[1], m[2])
				}
			} else {
				name = p.norm(m, low[loc[1]:])
			}
			if name != "" {
				best, bestAt = name, loc[0]
				break
			}
		}
	}
	if best != "" {
		return best
	}
	if m := familyIdentity.FindStringSubmatch(low); m != nil {
		return m[1]
	}
	return ""
}

func submatches(s string, loc []int) []string {
	m := make([]string, len(loc)/2)
	for i := range m {
		if loc[2*i] >= 0 {
			m[i] = s[loc[2*i]:loc[2*i+1]]
		}
	}
	return m
}

// precededBy reports whether the word before position i is one of words.
func precededBy(s string, i int, words []string) bool {
	j := i - 1
	for j >= 0 && (s[j] == ' ' || s[j] == '"' || s[j] == '\'' || s[j] == '(') {
		j--
	}
	end := j + 1
	for j >= 0 && s[j] != ' ' && s[j] != '\n' {
		j--
	}
	prev := s[j+1 : end]
	for _, w := range words {
		if prev == w {
			return true
		}
	}
	return false
}

func joinModel(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('-')
		}
		b.WriteString(p)
	}
	return b.String()
}

func sizeB(n string) string {
	if n == "" {
		return ""
	}
	return n + "b"
}

// smallVersion accepts "4", "3.5", "12" but not dates or build numbers.
func smallVersion(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	return v != "" && len(major) <= 2
}

func normGPT(m []string, _ string) string {
	if !smallVersion(m[1]) {
		return ""
	}
	name := "gpt-" + m[1] + m[2]
	for _, w := range strings.FieldsFunc(m[3], func(r rune) bool { return r == '-' || r == ' ' }) {
		switch w {
		case "mini", "nano", "turbo", "pro", "codex":
			name += "-" + w
		}
	}
	return name
}

func normClaude(m []string, _ string) string {
	minor := func(v string) string {
		if v == "" || len(v) > 2 { // "-20250514" is a release date
			return ""
		}
		return "." + v
	}
	switch {
	case m[3] != "": // claude-3-5-sonnet
		if !smallVersion(m[1]) {
			return ""
		}
		return "claude-" + m[1] + minor(m[2]) + "-" + m[3]
	case m[4] != "": // claude-sonnet-4-5, claude-instant-1.2
		if m[5] == "" {
			return "claude-" + m[4]
		}
		if !smallVersion(m[5]) {
			return "claude-" + m[4]
		}
		return "claude-" + m[4] + "-" + m[5] + minor(m[6])
	case m[7] != "": // claude-2.1
		if !smallVersion(m[7]) {
			return ""
		}
		return "claude-" + m[7] + minor(m[8])
	}
	return ""
}

func normGemini(m []string, _ string) string {
	if m[1] == "" && m[2] == "" {
		return ""
	}
	if m[1] != "" && !smallVersion(m[1]) {
		return ""
	}
	return joinModel("gemini", m[1], m[2], m[3])
}

func normLlama(m []string, _ string) string {
	if !smallVersion(m[1]) {
		return ""
	}
	return joinModel("llama", m[1], m[2], sizeB(m[3]))
}

func normMistral(m []string, _ string) string {
	name, variant, version := m[1], m[2], m[3]
	if name == "mistral" && variant == "" {
		return "" // "Mistral AI" is the company
	}
	if len(version) > 3 || strings.Contains(variant, "b") && version != "" {
		version = "" // "-2411" is a release date
	}
	return joinModel(name, variant, version)
}

func normQwen(m []string, after string) string {
	name, version, variant, size := m[1], m[2], m[3], m[4]
	if version != "" && variant == "" && size == "" && strings.HasPrefix(after, "b") {
		version, size = "", version // "qwq-32b": the number was the size
	}
	if version == "" && variant == "" && size == "" {
		return ""
	}
	if version != "" && !smallVersion(version) {
		return ""
	}
	return joinModel(name+version, variant, sizeB(size))
}

func normCommand(m []string, after string) string {
	if after != "" && (after[0] >= 'a' && after[0] <= 'z' || after[0] >= '0' && after[0] <= '9') {
		return "" // "command-runner" is no model
	}
	v := m[1]
	if v == "" {
		v = m[2]
	}
	full := m[0]
	switch {
	case v == "r+" || v == "r-plus" || v == "r plus" || v == "r" && strings.HasSuffix(full, "plus"):
		return "command-r-plus"
	case v == "":
		return ""
	}
	return "command-" + v
}

// ExtractOperator returns the company or product a prompt serves, from
// phrasings such as "You are Ava, an assistant for Acme Bank", "customer
// support agent for Acme Bank", "working for Initech", "on behalf of Globex
// Corporation", "Acme Corp's assistant", or, failing those, the maker in
// "built/created/developed/trained by OpenAI". The name is the run of
// capitalised words after the phrase, without trailing punctuation or a
// possessive, at most 200 bytes; "" if there is none.
func ExtractOperator(text string) string {
	norm := normalizePrompt(clip.Bytes(text, MaxPromptBytes))
	return extractOperator(norm, asciiLower(norm))
}

// Phrases after which the operator's name follows. Serving relationships
// beat makers: "an assistant for Acme, built by OpenAI" serves Acme.
var (
	servesPhrases = []string{
		"working for ", "works for ", "work for ", "employed by ", "on behalf of ",
		"customers of ", "clients of ", "users of ", "representing ",
		"built for ", "made for ", "designed for ", "created for ", "developed for ", "deployed for ",
		"deployed at ", "exclusively in ", "exclusively for ", "exclusively at ",
		// Spanish, French, German, Portuguese, Russian (matched on ASCII-lower-cased text).
		"asistente de ", "asistente para ", "asistente virtual de ", "agente de ", "trabajas para ", "en nombre de ",
		"de la empresa ", "para la empresa ",
		"assistant de ", "assistant pour ", "assistant virtuel de ", "agent de ", "pour le compte de ", "au nom de ",
		"travailles pour ", "de l'entreprise ", "de la société ",
		"assistent von ", "assistent für ", "assistentin von ", "assistentin für ", "im auftrag von ", "arbeitest für ",
		"der firma ", "für die firma ",
		"assistente da ", "assistente do ", "assistente de ", "assistente virtual da ", "em nome da ", "em nome de ",
		"trabalha para ", "da empresa ",
		"ассистент компании ", "помощник компании ", "от имени компании ", "от имени ", "агент компании ",
		"im auftrag der ", "im auftrag des ", "arbeitest für die ", "arbeitest für den ", "arbeitest für das ",
		"travailles pour la ", "travailles pour le ", "trabajas para la ", "trabajas para el ",
		// Italian, Dutch.
		"per conto di ", "per conto della ", "per conto del ", "lavori per ", "werkt voor ", "werk je voor ",
	}
	// intlRoles and intlRoleLinks: "<role> <link> <name>" in the languages whose prompts the
	// engine reads, a role being the end of a word (German compounds: "Kundenservice-Assistent
	// der Stadtwerke München"), optionally followed by one adjective ("assistant virtuel de la
	// Mairie de Lyon").
	intlRoles = []string{
		"assistent", "assistentin", "assistant", "assistante", "asistente", "assistente", "agent", "agente", "agentin",
		"chatbot", "bot", "berater", "beraterin", "conseiller", "conseillère", "asesor", "asesora", "consulente",
		"atendente", "helfer", "helferin", "medewerker", "ansprechpartner", "ansprechpartnerin", "copilot",
	}
	intlRoleAdjectives = map[string]bool{
		"virtuel": true, "virtuelle": true, "virtual": true, "virtuale": true, "virtuele": true, "digitale": true,
		"digitaler": true, "numérique": true, "officiel": true, "officielle": true, "oficial": true, "ufficiale": true,
		"intelligent": true, "intelligente": true, "personnel": true, "personnelle": true, "personale": true,
		"inteligente": true, "automatisé": true, "automatizzato": true, "automático": true, "automatico": true,
	}
	intlRoleLinks = []string{
		" der ", " des ", " von ", " für ", " bei ", // German
		" de la ", " de l'", " du ", " des ", " de ", " pour ", " chez ", // French
		" del ", " para ", // Spanish (" de la ", " de " above)
		" da ", " do ", " das ", " dos ", " na ", " no ", // Portuguese
		" di ", " della ", " dello ", " dell'", " dei ", " degli ", " per ", " presso ", // Italian
		" van de ", " van het ", " van ", " voor ", " bij ", // Dutch
	}
	// runsOnPhrases: "Acme Support runs on gpt-4o" names the operator before the phrase
	// when a model follows it.
	runsOnPhrases = []string{" runs on ", " is running on ", " is powered by ", " is built on ", " uses the model "}
	// cjkOperators find the operator in Chinese and Japanese, which do not separate words:
	// 你是<X>的…, 为<X>工作, 代表<X>, あなたは<X>の…, 株式会社<X> and <X>株式会社.
	cjkOperators = []*regexp.Regexp{
		regexp.MustCompile(`(?:你是|您是)([^，。,.、\s的]{2,30}?)的`),
		regexp.MustCompile(`(?:为|代表)([^，。,.、\s]{2,30}?)(?:工作|服务|提供|回答)`),
		regexp.MustCompile(`あなたは([^、。,.\s「」]{2,30}?)の`),
		regexp.MustCompile(`(株式会社[^、。,.\s「」の]{1,20}|[^、。,.\s「」の]{1,20}株式会社)`),
	}
	rolePhrases = []string{ // role noun + preposition
		"assistant", "agent", "bot", "chatbot", "copilot", "representative", "concierge",
		"advisor", "specialist", "helper", "guide", "ambassador", "associate", "companion",
	}
	roleLinks    = []string{" for ", " at ", " of "}
	makerPhrases = []string{
		"built by ", "created by ", "developed by ", "made by ", "trained by ", "designed by ",
		"deployed by ", "operated by ", "provided by ", "owned by ", "brought to you by ", "a product of ",
	}
	possessiveRoles = []string{"assistant", "agent", "chatbot", "bot", "copilot", "ai", "virtual", "support", "helper"}
	notNames        = map[string]bool{
		"you": true, "your": true, "user": true, "users": true, "me": true, "us": true, "our": true,
		"it": true, "this": true, "that": true, "them": true, "i": true, "we": true, "a": true,
		"an": true, "the": true, "ai": true, "an ai": true, "llm": true, "example": true, "you are": true,
		"they": true, "he": true, "she": true, "customers": true, "people": true, "all": true,
		"ia": true, "ki": true, "ии": true, "la": true, "le": true, "die": true, "der": true, "o": true,
	}
	nameSuffixes = map[string]bool{"inc": true, "corp": true, "co": true, "ltd": true, "llc": true, "plc": true, "gmbh": true, "ag": true, "sa": true}
)

// maxOperatorLen bounds an extracted operator name.
const maxOperatorLen = 200

func extractOperator(norm, low string) string {
	// 1. Serving relationships, earliest first.
	best, bestAt := "", -1
	try := func(at, nameAt int) {
		if bestAt >= 0 && at >= bestAt {
			return
		}
		if name := nameAfter(norm, nameAt); name != "" {
			best, bestAt = name, at
		}
	}
	for _, p := range servesPhrases {
		for from := 0; ; {
			i := indexWordPrefix(low, p, from)
			if i < 0 {
				break
			}
			try(i, i+len(p))
			from = i + 1
		}
	}
	for _, link := range intlRoleLinks {
		for from := 0; ; {
			i := strings.Index(low[from:], link)
			if i < 0 {
				break
			}
			i += from
			from = i + 1
			if bestAt >= 0 && i >= bestAt {
				break
			}
			if intlRoleBefore(norm[max(0, i-120):i]) {
				try(i, i+len(link))
			}
		}
	}
	for _, role := range rolePhrases {
		for from := 0; ; {
			i := indexWordPrefix(low, role, from)
			if i < 0 {
				break
			}
			from = i + 1
			end := i + len(role)
			for _, link := range roleLinks {
				if strings.HasPrefix(low[end:], link) {
					try(i, end+len(link))
				}
			}
		}
	}
	for _, p := range runsOnPhrases {
		for from := 0; ; {
			i := strings.Index(low[from:], p)
			if i < 0 {
				break
			}
			i += from
			from = i + 1
			if (bestAt < 0 || i < bestAt) && extractModel(clip.Bytes(low[i+len(p):], 80)) != "" {
				if name := nameBefore(norm, i); name != "" && !sentenceWord(name) {
					best, bestAt = name, i
				}
			}
		}
	}
	for _, re := range cjkOperators {
		if loc := re.FindStringSubmatchIndex(norm); loc != nil && (bestAt < 0 || loc[0] < bestAt) {
			if name := cleanName(norm[loc[2]:loc[3]]); name != "" {
				best, bestAt = name, loc[0]
			}
		}
	}
	for from := 0; ; {
		i := strings.Index(low[from:], "'s ")
		if i < 0 {
			break
		}
		i += from
		from = i + 1
		if possessiveRole(low[i+3:]) {
			if name := nameBefore(norm, i); name != "" && (bestAt < 0 || i < bestAt) {
				best, bestAt = name, i
			}
		}
	}
	if best != "" {
		return best
	}
	// 2. Makers.
	for _, p := range makerPhrases {
		for from := 0; ; {
			i := indexWordPrefix(low, p, from)
			if i < 0 {
				break
			}
			try(i, i+len(p))
			from = i + 1
		}
	}
	return best
}

// intlRoleBefore reports whether seg (the text before a link word) ends with a role
// word followed by at most four lower-case words without punctuation (an adjective or
// a complement): "…Kundenservice-Assistent", "…assistant virtuel", "…agente de atención
// al cliente", "…assistente clienti".
func intlRoleBefore(seg string) bool {
	words := strings.Fields(seg)
	for k := len(words) - 1; k >= 0 && k >= len(words)-5; k-- {
		w := strings.ToLower(words[k])
		for _, r := range intlRoles {
			if strings.HasSuffix(w, r) {
				return true
			}
		}
		if strings.ContainsAny(w, ".,;:!?()\"") || isNameWord(words[k]) && !intlRoleAdjectives[w] {
			return false
		}
	}
	return false
}

// possessiveRole: within three words after "'s" comes a role noun
// ("Acme's assistant", "Acme Corp's internal knowledge assistant").
func possessiveRole(s string) bool {
	words := strings.Fields(clip.Bytes(s, 80))
	for k, w := range words {
		if k >= 4 {
			break
		}
		w = strings.TrimRight(w, ".,;:!?)")
		for _, r := range possessiveRoles {
			if w == r {
				return true
			}
		}
		if strings.ContainsAny(w, ".,;:!?") {
			break
		}
	}
	return false
}

// leadingArticles are skipped before a name: "for the Acme Group", "für die Deutsche
// Bahn", "pour la Poste", "de l'Hôtel de Ville", "van het Rijksmuseum".
var leadingArticles = []string{"the ", "die ", "der ", "das ", "den ", "dem ", "la ", "le ", "les ", "l'", "el ", "los ",
	"las ", "il ", "lo ", "gli ", "het ", "de ", "o ", "a ", "os ", "as "}

// nameConnectors join the words of one name: "Bank of America", "Mairie de Lyon",
// "Comune di Milano", "Prefeitura do Rio", "Huis van Oranje", "Haus von Habsburg".
var nameConnectors = map[string]bool{"&": true, "and": true, "of": true, "de": true, "di": true, "da": true, "do": true,
	"del": true, "du": true, "van": true, "von": true}

// nameAfter reads a name starting at i: capitalised words (or all-caps,
// digits, camel case like "eBay"), joined by single spaces and the
// connectors (nameConnectors: "&", "and", "of", "de", "di", …); a leading lower-case
// article before a name ("the", "die", "la", … leadingArticles) is skipped.
// It stops at punctuation, a line break, a lower-case word or a possessive.
func nameAfter(norm string, i int) string {
	for _, art := range leadingArticles {
		if rest := norm[min(i, len(norm)):]; strings.HasPrefix(rest, art) && len(rest) > len(art) && isNameWord(rest[len(art):]) {
			i += len(art)
			break
		}
	}
	var words []string
	connector := ""
	for i < len(norm) && len(words) < 8 {
		j := i
		for j < len(norm) && isNameByte(norm[j]) {
			j++
		}
		raw := norm[i:j]
		w := strings.TrimRight(raw, ".'")
		w = strings.TrimSuffix(w, "'s")
		stop := w != raw // a sentence end or a possessive closes the name
		switch {
		case isNameWord(w) || len(words) > 0 && nameSuffixes[strings.ToLower(w)]:
			if connector != "" {
				words = append(words, connector)
				connector = ""
			}
			words = append(words, w)
		case len(words) > 0 && connector == "" && !stop && nameConnectors[w]:
			connector = w
		default:
			stop = true
		}
		if stop || j >= len(norm) || norm[j] != ' ' {
			break
		}
		i = j + 1
	}
	return cleanName(strings.Join(words, " "))
}

// nameBefore reads the name that ends at i, where "'s" follows
// ("This is Acme Corp's assistant" → "Acme Corp").
func nameBefore(norm string, i int) string {
	seg := norm[max(0, i-maxOperatorLen):i]
	if k := strings.LastIndexAny(seg, "\n,;:!?()\"<>"); k >= 0 {
		seg = seg[k+1:]
	}
	fields := strings.Split(seg, " ")
	var words []string
	for k := len(fields) - 1; k >= 0 && len(words) < 8; k-- {
		w := fields[k]
		if strings.HasSuffix(w, ".") && k < len(fields)-1 {
			break // the previous sentence
		}
		if isNameWord(w) && !sentenceWord(w) {
			words = append(words, w)
			continue
		}
		if len(words) > 0 && (w == "&" || w == "of" || w == "and") && k > 0 && isNameWord(fields[k-1]) && !sentenceWord(fields[k-1]) {
			words = append(words, w)
			continue
		}
		break
	}
	for l, r := 0, len(words)-1; l < r; l, r = l+1, r-1 {
		words[l], words[r] = words[r], words[l]
	}
	return cleanName(strings.Join(words, " "))
}

// cleanName trims punctuation, bounds the length and rejects pronouns and
// generic words that are not names.
func cleanName(name string) string {
	name = clip.Bytes(name, maxOperatorLen)
	name = strings.Trim(name, " .,;:!?-'\"«»“”„「」『』（）()")
	if name == "" || notNames[strings.ToLower(name)] {
		return ""
	}
	return name
}

// sentenceWord: capitalised words that open sentences rather than names.
func sentenceWord(w string) bool {
	switch w {
	case "This", "You", "Welcome", "Meet", "I", "We", "As", "Here", "It", "The", "Your", "Act", "Be":
		return true
	}
	return false
}

func isNameByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '&' || c == '-' || c == '\'' || c == '+' || c >= 0x80
}

// isNameWord: starts with an upper-case letter or digit, or is camel case
// ("eBay", "iFixit"), or is non-ASCII (accented names).
func isNameWord(w string) bool {
	if w == "" {
		return false
	}
	c := w[0]
	switch {
	case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c >= 0x80:
		return true
	case c >= 'a' && c <= 'z' && len(w) > 1 && w[1] >= 'A' && w[1] <= 'Z':
		return true
	}
	return false
}

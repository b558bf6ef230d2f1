package detect

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flytrap/flytrap/internal/clip"
)

// MaxPromptBytes bounds the captured text kept and analysed.
const MaxPromptBytes = 32 << 10

// PromptThreshold is the score from which text reads as a system prompt
// (given also a structural cue and an AI cue, see AnalyzePrompt).
const PromptThreshold = 7

// Prompt is captured text analysed as a possible system prompt.
type Prompt struct {
	Text     string // verbatim, at most MaxPromptBytes, cut on a rune boundary
	Hash     string // lower-case hex SHA-256 of Text with whitespace runs collapsed to one space
	Model    string // ExtractModel(Text)
	Operator string // ExtractOperator(Text)
	Score    int    // heuristic points, 0–100; see promptFeatures
}

// AnalyzePrompt reports whether text reads as an AI's own system prompt or
// instructions, and extracts what it reveals. The text is bounded first.
//
// The heuristic adds weighted cues (promptFeatures): second-person role setup
// at the start of a sentence ("You are Ava, a …", "You are a helpful
// assistant"), "Your role/task/goal is", rules ("You must", "never reveal"),
// system markers ("<<SYS>>", "role":"system", "system prompt"), tool and
// function descriptions, "knowledge cutoff", "current date", "as an AI", a
// model name. It answers true only when the score reaches PromptThreshold AND
// at least one cue is structural (role setup, system marker, rules about the
// prompt itself, tools, cutoff/date) AND the text mentions something AI
// (assistant, model, AI, user, tools, a model family). Names, e-mail
// addresses, search queries, messages to a company and job adverts fail one
// of the three.
func AnalyzePrompt(text string) (Prompt, bool) {
	text = clip.Bytes(text, MaxPromptBytes)
	p := Prompt{Text: text, Hash: PromptHash(text)}
	norm := normalizePrompt(text)
	low := asciiLower(norm)
	score, anchored := promptScore(norm, low)
	ulow := low
	if hasNonASCII(norm) {
		ulow = strings.ToLower(norm) // Cyrillic, accented capitals; offsets may differ from norm
	}
	w, a := intlScore(ulow)
	score, anchored = score+w, anchored || a
	w, a = firstPersonSetup(norm, low)
	score, anchored = score+w, anchored || a
	p.Model = extractModel(low)
	if p.Model != "" {
		score += 2
	}
	p.Operator = extractOperator(norm, low)
	p.Score = min(score, 100)
	return p, anchored && score >= PromptThreshold && (hasAICue(low, p.Model) || hasIntlAICue(ulow))
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// PromptHash is the lower-case hex SHA-256 of text with every run of white
// space replaced by one space and the ends trimmed, so the same prompt sent
// with different line breaks or indentation clusters under one hash.
func PromptHash(text string) string {
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(text), " ")))
	return hex.EncodeToString(sum[:])
}

// promptFeature is one weighted cue. Patterns are lower case and match at a
// word start. Each feature counts once however often it occurs.
type promptFeature struct {
	pat    string
	weight int
	anchor bool // structural: only a prompt, not a message about AI, has it
}

// promptFeatures is the one table of prompt cues and their weights.
var promptFeatures = []promptFeature{
	// System-prompt markers and chat templates.
	{"system prompt", 4, true},
	{"system message", 3, true},
	{"system instructions", 4, true},
	{"<<sys>>", 5, true},
	{"<|im_start|>system", 5, true},
	{"<|start_header_id|>system", 5, true},
	{`"role":"system"`, 5, true},
	{`"role": "system"`, 5, true},
	{"<system>", 4, true},
	{"[system]", 3, true},
	{"# system", 3, true},
	{"[inst]", 3, true},
	// The prompt describing the model's job.
	{"your role is", 3, true},
	{"your role:", 3, true},
	{"role:", 1, false},
	{"your task is", 3, true},
	{"your job is", 3, true},
	{"your goal is", 3, true},
	{"your purpose is", 3, true},
	{"your primary goal", 3, true},
	{"your primary function", 3, true},
	{"your mission is", 3, true},
	{"your name is", 2, false},
	{"persona", 2, false},
	// Rules about the prompt itself.
	{"never reveal", 4, true},
	{"do not reveal", 4, true},
	{"don't reveal", 4, true},
	{"never disclose", 4, true},
	{"do not disclose", 4, true},
	{"do not share these", 3, true},
	{"instructions:", 3, true},
	{"# instructions", 3, true},
	{"these instructions", 3, true},
	{"the instructions above", 3, true},
	{"above instructions", 3, true},
	// Tools and functions.
	{"you have access to the following tools", 5, true},
	{"you have access to the following functions", 5, true},
	{"you have access to", 2, false},
	{"available tools", 3, true},
	{"# tools", 3, true},
	{"tools:", 2, false},
	{"<tools>", 4, true},
	{`"type":"function"`, 4, true},
	{`"type": "function"`, 4, true},
	{"tool_call", 3, true},
	{"tool_use", 3, true},
	{"function calling", 3, true},
	{"use the following format", 3, true},
	{"action input:", 4, true},
	{"observation:", 1, false},
	{"thought:", 1, false},
	// What only a deployed model is told about itself.
	{"knowledge cutoff", 5, true},
	{"knowledge cut-off", 5, true},
	{"cutting knowledge date", 5, true},
	{"knowledge base was last updated", 4, true},
	{"training cutoff", 4, true},
	{"current date", 3, true},
	{"today's date", 2, false},
	{"today date", 2, false},
	{"current time", 1, false},
	{"image input capabilities", 5, true},
	{"personality: v", 4, true},
	// Softer cues: common in prompts, also in text about AI.
	{"helpful assistant", 3, false},
	{"ai assistant", 2, false},
	{"assistant", 1, false},
	{"as an ai", 3, false},
	{"large language model", 3, false},
	{"language model", 1, false},
	{"chatbot", 1, false},
	{"you must", 2, false},
	{"you should", 1, false},
	{"you will", 1, false},
	{"always respond", 2, false},
	{"always answer", 2, false},
	{"always reply", 2, false},
	{"respond only", 2, false},
	{"only respond", 2, false},
	{"answer only", 1, false},
	{"only answer", 1, false},
	{"do not mention", 2, false},
	{"never mention", 2, false},
	{"under no circumstances", 2, false},
	{"politely decline", 2, false},
	{"refuse", 1, false},
	{"if the user", 3, false},
	{"the user", 2, false},
	{"user's", 1, false},
	{"format your response", 2, false},
	{"respond in", 1, false},
	{"markdown", 1, false},
	{"do not make up", 2, false},
	{"hallucinat", 2, false},
	{"trained by", 2, false},
	{"created by", 1, false},
	{"developed by", 1, false},
	{"built by", 1, false},
	{"powered by", 1, false},
	{"step by step", 1, false},
	{"guidelines", 1, false},
	{"rules:", 1, false},
	// First-person self-descriptions: an agent describing its own setup.
	{"my system prompt", 4, true},
	{"my instructions", 3, true},
	{"my operating instructions", 4, true},
	{"i was instructed", 3, true},
	{"i have been instructed", 3, true},
	{"i've been instructed", 3, true},
	{"i am instructed", 3, true},
	{"my operator", 3, true},
	{"my underlying model", 3, true},
	{"my model is", 3, true},
	{"i am an ai", 3, false},
	{"i'm an ai", 3, false},
	{"i run on", 2, false},
	{"i'm running on", 2, false},
	{"i am running on", 2, false},
	{"i am powered by", 2, false},
	{"i'm powered by", 2, false},
}

// intlFeatures are the cues of promptFeatures in Spanish, French, German, Portuguese,
// Italian, Dutch, Chinese, Japanese and Russian, matched on the Unicode-lower-cased text.
var intlFeatures = []promptFeature{
	// Role setup ("you are a …").
	{"eres un ", 4, true}, {"eres una ", 4, true}, {"usted es un", 4, true},
	{"tu es un ", 4, true}, {"tu es une ", 4, true}, {"vous êtes un", 4, true},
	{"du bist ein", 4, true}, {"sie sind ein", 4, true},
	{"du bist der ", 4, true}, {"du bist die ", 4, true}, {"du bist das ", 4, true},
	{"tu es l'", 4, true}, {"tu es le ", 3, true}, {"tu es la ", 3, true}, {"eres el ", 3, true}, {"eres la ", 3, true},
	// Italian and Dutch.
	{"sei un ", 4, true}, {"sei una ", 4, true}, {"sei l'", 4, true}, {"sei il ", 3, true},
	{"je bent een ", 4, true}, {"jij bent een ", 4, true}, {"u bent een ", 4, true}, {"je bent de ", 3, true},
	{"prompt di sistema", 4, true}, {"istruzioni di sistema", 4, true}, {"queste istruzioni", 3, true},
	{"non rivelare mai", 4, true}, {"non rivelare", 4, true}, {"mai rivelare", 4, true},
	{"systeemprompt", 4, true}, {"systeeminstructies", 4, true}, {"deze instructies", 3, true},
	{"onthul nooit", 4, true}, {"nooit onthullen", 4, true},
	{"devi ", 2, false}, {"rispondi sempre", 2, false}, {"je moet", 2, false}, {"antwoord altijd", 2, false},
	{"utente", 2, false}, {"gebruiker", 2, false},
	{"você é um", 4, true}, {"você é uma", 4, true}, {"você é o ", 4, true}, {"você é a ", 4, true}, {"tu és um", 4, true},
	{"你是一个", 4, true}, {"你是一名", 4, true}, {"你是", 1, false}, {"您是", 1, false},
	{"あなたは", 2, false}, {"として振る舞", 3, true},
	{"ты — ", 4, true}, {"ты - ", 4, true}, {"вы — ", 4, true}, {"ты являешься", 4, true}, {"вы являетесь", 4, true}, {"ты ", 1, false},
	// The prompt itself, and rules about it.
	{"prompt del sistema", 4, true}, {"instrucciones del sistema", 4, true}, {"estas instrucciones", 3, true},
	{"nunca reveles", 4, true}, {"no reveles", 4, true}, {"no divulgues", 4, true},
	{"prompt système", 4, true}, {"invite système", 4, true}, {"instructions système", 4, true}, {"ces instructions", 3, true},
	{"ne révèle jamais", 4, true}, {"ne divulgue jamais", 4, true}, {"ne révélez jamais", 4, true}, {"ne divulguez", 4, true},
	{"systemprompt", 4, true}, {"system-prompt", 4, true}, {"systemanweisung", 4, true}, {"diese anweisungen", 3, true},
	{"niemals preis", 4, true}, {"gib niemals", 3, true}, {"gib diese", 3, true},
	{"prompt do sistema", 4, true}, {"instruções do sistema", 4, true}, {"estas instruções", 3, true},
	{"nunca revele", 4, true}, {"não revele", 4, true}, {"não divulgue", 4, true},
	{"系统提示", 4, true}, {"系统指令", 4, true}, {"不要透露", 4, true}, {"切勿透露", 4, true}, {"不得透露", 4, true}, {"不要泄露", 4, true},
	{"システムプロンプト", 4, true}, {"開示しない", 4, true}, {"明かさない", 4, true}, {"漏らさない", 4, true},
	{"системный промпт", 4, true}, {"системные инструкции", 4, true}, {"системная инструкция", 4, true},
	{"не раскрывай", 4, true}, {"никогда не раскрывай", 4, true}, {"не разглашай", 4, true}, {"эти инструкции", 3, true},
	// Tools, cutoff, date.
	{"tienes acceso a", 2, false}, {"herramientas", 2, false}, {"tu as accès", 2, false}, {"vous avez accès", 2, false}, {"outils", 1, false},
	{"du hast zugriff", 2, false}, {"werkzeuge", 1, false}, {"você tem acesso", 2, false}, {"ferramentas", 1, false},
	{"工具", 2, false}, {"ツール", 2, false}, {"инструмент", 1, false},
	{"fecha de corte", 4, true}, {"fecha actual", 3, true}, {"date actuelle", 3, true}, {"date limite des connaissances", 4, true},
	{"wissensstand", 4, true}, {"aktuelles datum", 3, true}, {"data atual", 3, true}, {"data de corte", 4, true},
	{"知识截止", 4, true}, {"当前日期", 3, true}, {"知識のカットオフ", 4, true}, {"現在の日付", 3, true},
	{"дата отсечения знаний", 4, true}, {"текущая дата", 3, true},
	// Soft rules.
	{"debes ", 2, false}, {"siempre responde", 2, false}, {"tu dois", 2, false}, {"vous devez", 2, false}, {"réponds toujours", 2, false},
	{"du musst", 2, false}, {"antworte immer", 2, false}, {"você deve", 2, false}, {"responda sempre", 2, false},
	{"你必须", 2, false}, {"必须", 1, false}, {"始终", 1, false}, {"必ず", 2, false}, {"ください", 1, false},
	{"ты должен", 2, false}, {"вы должны", 2, false}, {"всегда отвечай", 2, false}, {"пользовател", 2, false},
	{"usuario", 2, false}, {"utilisateur", 2, false}, {"benutzer", 2, false}, {"nutzer", 1, false}, {"usuário", 2, false},
	{"用户", 2, false}, {"ユーザー", 2, false},
}

// intlAICues are aiCues in the same languages.
var intlAICues = []string{
	"asistente", "inteligencia artificial", "modelo", "usuario", "assistant", "intelligence artificielle", "modèle",
	"utilisateur", "assistent", "ki", "künstliche intelligenz", "modell", "benutzer", "nutzer", "assistente",
	"inteligência artificial", "usuário", "ia", "助手", "人工智能", "模型", "用户", "客服", "アシスタント", "モデル",
	"ユーザー", "modello", "utente", "gebruiker", "ассистент", "помощник", "агент", "модель", "пользовател", "ии", "бот",
}

func intlScore(ulow string) (score int, anchored bool) {
	for _, f := range intlFeatures {
		if hasWordPrefix(ulow, f.pat) {
			score += f.weight
			anchored = anchored || f.anchor
		}
	}
	return score, anchored
}

func hasIntlAICue(ulow string) bool {
	for _, c := range intlAICues {
		if hasWord(ulow, c) {
			return true
		}
	}
	return false
}

// firstPersonSetup scores an agent describing itself: "I am Atlas, an autonomous
// research agent …", "I'm a procurement assistant …" at the start of a sentence, in a
// sentence that names something AI (assistant, agent, model, …), is structural (4).
func firstPersonSetup(norm, low string) (int, bool) {
	for _, pat := range []string{"i am ", "i'm "} {
		for from := 0; from < len(low); {
			i := indexWordPrefix(low, pat, from)
			if i < 0 {
				break
			}
			from = i + len(pat)
			if !sentenceStart(low, i) || !followsRole(norm, low, from) {
				continue
			}
			end := len(low)
			if k := strings.IndexAny(low[from:], ".\n"); k >= 0 {
				end = from + k
			}
			if hasAICue(low[from:end], "") {
				return 4, true
			}
		}
	}
	return 0, false
}

// promptScore sums the features present in low (the ASCII-lower-cased norm).
func promptScore(norm, low string) (score int, anchored bool) {
	for _, f := range promptFeatures {
		if hasWordPrefix(low, f.pat) {
			score += f.weight
			anchored = anchored || f.anchor
		}
	}
	w, a := roleSetup(norm, low)
	return score + w, anchored || a
}

// roleSetup scores second-person role setup: "You are a …", "You are Ava,
// …", "Act as an …", "The assistant is …" at the start of a sentence is
// structural (4 points); "you are" elsewhere is one soft point.
func roleSetup(norm, low string) (int, bool) {
	best := 0
	for _, pat := range []string{"you are ", "you're ", "act as ", "the assistant is "} {
		for from := 0; from < len(low); {
			i := indexWordPrefix(low, pat, from)
			if i < 0 {
				break
			}
			from = i + len(pat)
			if (pat == "the assistant is " || sentenceStart(low, i)) && followsRole(norm, low, from) {
				return 4, true
			}
			best = 1
		}
	}
	return best, false
}

// sentenceStart reports whether position i begins a sentence, line, list
// item or quoted string.
func sentenceStart(s string, i int) bool {
	j := i - 1
	for j >= 0 && (s[j] == ' ' || s[j] == '\t') {
		j--
	}
	return j < 0 || strings.IndexByte("\n.!?:;\"'{[(>-|", s[j]) >= 0
}

// followsRole reports whether a role description starts at i: an article
// ("a", "an", "the") or a capitalised name followed by a comma or
// parenthesis ("Ava, a friendly …", "ChatGPT, a large language model").
func followsRole(norm, low string, i int) bool {
	rest := low[i:]
	for _, art := range []string{"a ", "an ", "the ", "now "} {
		if strings.HasPrefix(rest, art) {
			return true
		}
	}
	if i >= len(norm) || norm[i] < 'A' || norm[i] > 'Z' {
		return false
	}
	j := i
	for j < len(norm) && (isAlnum(norm[j]) || norm[j] == '-' || norm[j] == '.' || norm[j] == '_') {
		j++
	}
	for j > i && norm[j-1] == '.' {
		j-- // "Claude." ends a sentence
	}
	return j < len(norm) && (norm[j] == ',' || norm[j] == '(' || strings.HasPrefix(norm[j:], " (") || strings.HasPrefix(norm[j:], " -"))
}

// aiCues are words at least one of which an AI's prompt contains; job
// adverts and letters that otherwise read like instructions do not.
var aiCues = []string{
	"assistant", "assistants", "ai", "a.i.", "llm", "language model", "model", "models", "prompt",
	"tools", "tool", "functions", "function call", "the user", "users", "user", "chatbot", "agent",
	"agents", "chatgpt", "claude", "gemini", "openai", "anthropic", "knowledge cutoff", "bot",
}

func hasAICue(low, model string) bool {
	if model != "" {
		return true
	}
	for _, c := range aiCues {
		if hasWord(low, c) {
			return true
		}
	}
	return false
}

// normalizePrompt turns captured text into plain prose for analysis: URL
// encoding and JSON string escapes (up to two levels) are decoded, markdown
// emphasis and code marks dropped, typographic quotes straightened, and runs
// of blanks collapsed (line breaks kept). Case is preserved and so are byte
// offsets between the result and asciiLower(result).
func normalizePrompt(s string) string {
	if !strings.ContainsAny(s, " \n\t") && (strings.Contains(s, "%20") || strings.Contains(s, "+")) {
		if u, err := url.QueryUnescape(s); err == nil {
			s = u
		}
	}
	for range 2 {
		if !strings.Contains(s, `\`) {
			break
		}
		s = unescapeJSONish(s)
	}
	b := make([]byte, 0, len(s))
	lastSpace, lastNL := true, true
	for _, r := range s {
		switch r {
		case '*', '`':
			continue
		case '\u2018', '\u2019', '\u02bc':
			r = '\''
		case '\u201c', '\u201d':
			r = '"'
		case '\u00a0', '\u2007', '\u202f', '\t', '\r', '\f', '\v':
			r = ' '
		case '\u200b', '\u200c', '\u200d', '\ufeff':
			continue
		}
		switch {
		case r == '\n':
			if lastNL {
				continue
			}
			if n := len(b); n > 0 && b[n-1] == ' ' {
				b = b[:n-1] // no blank before a line break
			}
			b = append(b, '\n')
			lastSpace, lastNL = true, true
		case r == ' ':
			if lastSpace {
				continue
			}
			b = append(b, ' ')
			lastSpace = true
		default:
			b = utf8.AppendRune(b, r)
			lastSpace, lastNL = false, false
		}
	}
	return strings.TrimSpace(string(b))
}

// unescapeJSONish decodes the escapes a JSON string would carry (\n, \t,
// \", \\, \/, \uXXXX) wherever they appear; anything else is kept.
func unescapeJSONish(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch n := s[i+1]; n {
		case 'n':
			b.WriteByte('\n')
			i++
		case 'r', 't', 'f', 'b':
			b.WriteByte(' ')
			i++
		case '"', '\\', '/', '\'':
			b.WriteByte(n)
			i++
		case 'u':
			if i+6 <= len(s) {
				if v, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
					r := rune(v)
					if !utf8.ValidRune(r) { // a lone surrogate half
						r = utf8.RuneError
					}
					b.WriteRune(r)
					i += 5
					continue
				}
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// asciiLower lower-cases ASCII letters only, so byte offsets match s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// indexWordPrefix finds pat in s at or after from where it starts a word
// (the byte before is not a letter or digit).
func indexWordPrefix(s, pat string, from int) int {
	for from <= len(s)-len(pat) {
		i := strings.Index(s[from:], pat)
		if i < 0 {
			return -1
		}
		i += from
		if i == 0 || !isAlnum(s[i-1]) || !isAlnum(pat[0]) {
			return i
		}
		from = i + 1
	}
	return -1
}

func hasWordPrefix(s, pat string) bool { return indexWordPrefix(s, pat, 0) >= 0 }

// hasWord reports whether w occurs in s as a whole word.
func hasWord(s, w string) bool {
	for from := 0; ; {
		i := indexWordPrefix(s, w, from)
		if i < 0 {
			return false
		}
		end := i + len(w)
		if end == len(s) || !isAlnum(s[end]) || !isAlnum(w[len(w)-1]) {
			return true
		}
		from = i + 1
	}
}

package detect

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
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
	text = truncateUTF8(text, MaxPromptBytes)
	p := Prompt{Text: text, Hash: PromptHash(text)}
	norm := normalizePrompt(text)
	low := asciiLower(norm)
	score, anchored := promptScore(norm, low)
	p.Model = extractModel(low)
	if p.Model != "" {
		score += 2
	}
	p.Operator = extractOperator(norm, low)
	p.Score = min(score, 100)
	return p, anchored && score >= PromptThreshold && hasAICue(low, p.Model)
}

// PromptHash is the lower-case hex SHA-256 of text with every run of white
// space replaced by one space and the ends trimmed, so the same prompt sent
// with different line breaks or indentation clusters under one hash.
func PromptHash(text string) string {
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(text), " ")))
	return hex.EncodeToString(sum[:])
}

// truncateUTF8 keeps at most n bytes of s without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
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

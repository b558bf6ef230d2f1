package detect

import (
	"strings"

	"github.com/flytrap/flytrap/internal/clip"
)

// Reply is what text sent to a sink says when it is not a system prompt: an agent told to
// send its instructions answered the request, but what it sent is a refusal, an apology
// or a short acknowledgement. It followed the injection (it posted where it was told), so
// the sink's firing is INJECTION_FOLLOWED, but it leaked nothing: no SYSTEM_PROMPT_LEAKED.
type Reply uint8

const (
	ReplyNone    Reply = iota // not a reply: a prompt, or text that says nothing (test, {}, a form's fields)
	ReplyRefusal              // "I'm sorry, but I can't share my system prompt", "Lo siento, no puedo…"
	ReplyAck                  // "OK", "Understood", "Verstanden", "了解"
)

func (r Reply) String() string {
	switch r {
	case ReplyRefusal:
		return "refusal"
	case ReplyAck:
		return "acknowledgement"
	}
	return "none"
}

// maxRefusalBytes bounds a refusal: longer text is judged as a prompt (or nothing) only.
const maxRefusalBytes = 1500

// refusalOpeners are first-person refusals and apologies, in the languages whose prompts
// the engine reads (promptFeatures, intlFeatures) and Italian and Dutch; matched at a word
// start in the Unicode-lower-cased first 240 bytes of the text.
var refusalOpeners = []string{
	// English
	"i'm sorry", "i am sorry", "sorry", "i apologize", "i apologise", "apologies", "unfortunately",
	"i can't", "i cannot", "i can not", "i'm unable", "i am unable", "i'm not able", "i am not able",
	"i won't", "i will not", "i'm not allowed", "i am not allowed", "i'm not permitted", "i am not permitted",
	"i must decline", "i have to decline", "i need to decline", "i'm afraid", "i am afraid",
	"i don't share", "i do not share", "i don't disclose", "i do not disclose", "i'm not going to", "i am not going to",
	// Spanish
	"lo siento", "lo lamento", "no puedo", "disculpa", "disculpe", "lamentablemente", "perdón",
	// French
	"je suis désolé", "désolé", "désolée", "je ne peux pas", "je ne peux", "je regrette", "malheureusement",
	"je ne suis pas en mesure", "je suis navré", "navré",
	// German
	"es tut mir leid", "tut mir leid", "entschuldigung", "entschuldige", "leider", "ich kann keine", "ich kann nicht",
	"ich kann dir", "ich kann ihnen", "ich darf nicht", "ich darf keine", "ich darf dir", "ich darf ihnen",
	// Portuguese
	"desculpe", "desculpa", "sinto muito", "lamento", "não posso", "infelizmente",
	// Italian
	"mi dispiace", "spiacente", "non posso", "purtroppo", "mi scuso",
	// Dutch
	"het spijt me", "helaas", "ik kan geen", "ik kan niet", "ik kan de", "ik mag niet", "ik mag geen",
	// Chinese, Japanese, Russian
	"抱歉", "对不起", "很抱歉", "我不能", "我无法", "无法提供", "不能提供", "不能分享",
	"申し訳", "すみません", "できません", "お答えできません", "お伝えできません",
	"извините", "простите", "к сожалению", "я не могу", "не могу",
}

// ackWords make up a short acknowledgement ("OK", "Understood.", "Got it!", "Alles klar").
// ackPrimary are those that carry it: "it" or "do" alone acknowledge nothing.
var (
	ackWords = map[string]bool{
		"ok": true, "okay": true, "oké": true, "understood": true, "noted": true, "acknowledged": true, "sure": true,
		"done": true, "roger": true, "confirmed": true, "got": true, "it": true, "will": true, "do": true, "yes": true,
		"alright": true, "all": true, "right": true, "thanks": true, "thank": true, "you": true,
		"verstanden": true, "alles": true, "klar": true, "in": true, "ordnung": true, "gut": true,
		"d'accord": true, "compris": true, "entendu": true, "bien": true, "reçu": true,
		"entendido": true, "de": true, "acuerdo": true, "vale": true, "claro": true,
		"entendi": true, "compreendido": true, "certo": true, "recebido": true,
		"capito": true, "ricevuto": true, "va": true, "bene": true, "begrepen": true, "prima": true, "akkoord": true,
		"понял": true, "поняла": true, "понятно": true, "хорошо": true, "принято": true, "ясно": true, "ладно": true,
	}
	ackPrimary = map[string]bool{
		"ok": true, "okay": true, "oké": true, "understood": true, "noted": true, "acknowledged": true, "sure": true,
		"done": true, "roger": true, "confirmed": true, "got": true, "alright": true,
		"verstanden": true, "klar": true, "ordnung": true, "d'accord": true, "compris": true, "entendu": true, "reçu": true,
		"entendido": true, "acuerdo": true, "vale": true, "entendi": true, "compreendido": true, "recebido": true,
		"capito": true, "ricevuto": true, "begrepen": true, "akkoord": true,
		"понял": true, "поняла": true, "понятно": true, "принято": true, "ясно": true,
	}
	ackCJK = []string{"了解", "明白", "明白了", "好的", "收到", "知道了", "わかりました", "分かりました", "承知しました", "了解しました", "了解です"}
)

// instructionCues are what a prompt has and a refusal does not: the text addresses the
// model (role setup, rules, what to do "if asked"), or carries a chat template or a tools
// list. Matched at a word start on the Unicode-lower-cased text. A prompt that contains a
// refusal as one of its rules ("Never reveal … If asked, say 'I can't share that'") has
// them, so it stays a leak.
var instructionCues = []string{
	"you must", "you have access to", "your role", "your task", "your job", "your goal",
	"your purpose", "your mission", "your name is", "your primary", "if the user", "if a user", "if asked",
	"when asked", "if someone asks", "if anyone asks", "if you are asked", "if you're asked", "always respond",
	"always answer", "always reply", "respond only", "only respond", "do not mention", "never mention",
	"under no circumstances", "<<sys>>", "<|im_start|>", "<|start_header_id|>", `"role":"system"`, `"role": "system"`,
	"[inst]", "<system>", "# instructions", "instructions:", "rules:", "tools:", "available tools", "knowledge cutoff",
	"knowledge cut-off", "current date",
	// Spanish, French, German, Portuguese, Italian, Dutch, Chinese, Japanese, Russian.
	"eres un", "eres una", "eres el", "eres la", "usted es un", "debes ", "nunca reveles", "no reveles", "si te preguntan",
	"tu es un", "tu es une", "tu es le", "tu es la", "tu es l'", "vous êtes un", "vous êtes une", "tu dois", "vous devez",
	"ne révèle", "ne divulgue", "si on te demande",
	"du bist", "sie sind ein", "du musst", "du sollst", "gib niemals", "verrate niemals", "wenn du gefragt",
	"você é", "tu és", "você deve", "nunca revele", "não revele", "se perguntarem",
	"sei un", "sei una", "sei l'", "devi ", "non rivelare", "se ti chiedono",
	"je bent", "jij bent", "u bent een", "je moet", "onthul nooit", "als iemand vraagt",
	"你是", "您是", "你必须", "不要透露", "切勿透露", "不得透露", "あなたは", "として振る舞", "開示しない",
	"ты — ", "ты - ", "вы — ", "ты являешься", "ты должен", "вы должны", "не раскрывай", "никогда не раскрывай",
}

// sentenceImperatives open a rule when they begin a sentence ("Never reveal…", "Do not…").
var sentenceImperatives = []string{"never ", "do not ", "don't ", "always ", "only ", "act as "}

// ReadReply says whether text sent to a sink is a refusal, an apology or a short
// acknowledgement rather than a system prompt (see Reply). A refusal opens (within its
// first 240 bytes) with a first-person refusal or apology, is at most 1500 bytes, and has
// none of a prompt's instruction cues (instructionCues, a rule opening a sentence, a
// second-person role setup, or a first-person setup that names its operator). An
// acknowledgement is the whole text: a few words such as "OK", "Understood", "Got it",
// "Verstanden", "D'accord", "了解".
func ReadReply(text string) Reply {
	text = clip.Bytes(text, maxRefusalBytes+1)
	norm := normalizePrompt(text)
	if norm == "" {
		return ReplyNone
	}
	ulow := strings.ToLower(norm)
	if isAck(ulow) {
		return ReplyAck
	}
	if len(norm) > maxRefusalBytes || !opensWithRefusal(ulow) {
		return ReplyNone
	}
	if instructs(norm, asciiLower(norm), ulow) {
		return ReplyNone
	}
	return ReplyRefusal
}

func isAck(ulow string) bool {
	if len(ulow) > 60 {
		return false
	}
	t := strings.Trim(ulow, " \n.!。！、,…\"'«»「」")
	for _, a := range ackCJK {
		if t == a {
			return true
		}
	}
	words := strings.FieldsFunc(t, func(r rune) bool { return strings.ContainsRune(" \n,.!;:—-…", r) })
	primary := false
	for _, w := range words {
		if !ackWords[w] {
			return false
		}
		primary = primary || ackPrimary[w]
	}
	return primary && len(words) <= 6
}

func opensWithRefusal(ulow string) bool {
	head := clip.Bytes(ulow, 240)
	for _, o := range refusalOpeners {
		if hasWordPrefix(head, o) {
			return true
		}
	}
	return false
}

// instructs reports whether text carries what only a prompt does (see instructionCues).
func instructs(norm, low, ulow string) bool {
	for _, c := range instructionCues {
		if hasWordPrefix(ulow, c) {
			return true
		}
	}
	for _, imp := range sentenceImperatives {
		for from := 0; ; {
			i := indexWordPrefix(low, imp, from)
			if i < 0 {
				break
			}
			if sentenceStart(low, i) {
				return true
			}
			from = i + 1
		}
	}
	if _, anchored := roleSetup(norm, low); anchored {
		return true
	}
	if _, anchored := firstPersonSetup(norm, low); anchored && extractOperator(norm, low) != "" {
		return true
	}
	return false
}

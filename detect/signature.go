package detect

// SignatureState is what the trap listener made of a request's HTTP message signature
// (Web Bot Auth: RFC 9421 signatures with a Signature-Agent naming the signer's key
// directory). The listener decides it (package botauth); detect only reads it.
type SignatureState uint8

const (
	SignatureNone         SignatureState = iota // no Signature / Signature-Input headers
	SignatureValid                              // verified against a key of the agent's directory
	SignatureInvalid                            // does not verify, out of its time window, or malformed
	SignatureReplayed                           // verified, but its nonce was already seen within its window
	SignatureUnverifiable                       // could not be checked (directory unreachable or pending, unsupported algorithm…)
)

// String names the state as the signals' detail and the docs do.
func (s SignatureState) String() string {
	switch s {
	case SignatureValid:
		return "verified"
	case SignatureInvalid:
		return "invalid"
	case SignatureReplayed:
		return "replayed"
	case SignatureUnverifiable:
		return "unverifiable"
	}
	return "none"
}

// Signature is the fact of a request's signature: what was proved (Agent and KeyID when
// valid) or why not (Reason). Agent is the origin the Signature-Agent header names (or
// the directory URL when it names one beyond an origin), bounded and never trusted
// unless State is SignatureValid.
type Signature struct {
	State  SignatureState
	Agent  string
	KeyID  string
	Reason string
}

// Text is the fact in words, as the session detail shows it: "verified: <agent> (key
// <kid>)" or why not.
func (s Signature) Text() string {
	switch s.State {
	case SignatureNone:
		return ""
	case SignatureValid:
		return "verified: " + s.Agent + " (key " + s.KeyID + ")"
	}
	t := s.State.String()
	if s.Agent != "" {
		t += " signature from " + s.Agent
	} else {
		t += " signature"
	}
	if s.KeyID != "" {
		t += " (key " + s.KeyID + ")"
	}
	if s.Reason != "" {
		t += ": " + s.Reason
	}
	return t
}

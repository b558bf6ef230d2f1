// Package decoy makes the decoys traps serve, and the tokens that tie whatever a visitor
// does next back to the response and placement that caused it.
//
// Every decoy response carries hidden content aimed at machine readers in several
// placements (HTML comment, CSS-hidden and aria-hidden elements, meta tags and data
// attributes, zero-width text, JSON metadata and fields, llms.txt and robots.txt lines,
// MCP tool definitions, a config file, a Link header). Each placement has its own token,
// minted by NewToken from the hit id, the placement index and its Purpose, and asks of
// its reader one thing:
//
//   - Callback: request a hidden URL (a parser followed hidden content: a BOT on its own).
//   - Challenge: request a URL with ?code=N, N the sum of two numbers stated in words
//     (ChallengeAnswer); the answer never appears literally in the response.
//   - Canary: repeat a phrase (CanaryPhrase) in the next request.
//   - Sink: send one's own system prompt to a URL.
//   - Credential: a planted key (CredentialValue) whose later use is a tripwire.
//   - Tool: a decoy MCP tool whose required authorization_ref argument is the token.
//
// The engine records a hit's Placements, runs FindTokens over every later request's
// path, query, headers and body, and ParseToken resolves each token to its hit, index
// and purpose without any lookup. Tokens are 48 characters of lower-case base32 that
// encrypt and authenticate (SIV-style with AES, seal.go) the hit id, index and purpose,
// so they can be neither guessed nor forged, and tokens of one response share nothing visible.
//
// Render is a pure function of the key, the trap and the hit id: a trap's look is seeded
// by its id, a response's details and tokens by the hit. Nothing here does I/O.
package decoy

package decoy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
)

// The two seals of a token's 18-byte payload into its 30 raw bytes, both SIV-style
// (Rogaway–Shrimpton's deterministic authenticated encryption: a PRF of the payload is the
// tag, and a PRF of the tag the stream the payload is XORed with), both with a 96-bit tag:
//
//   - the AES seal, which mints every token but snippets: tag = AES-CMAC(K1, payload)[:12]
//     (RFC 4493), ciphertext = payload ⊕ AES-CTR(K2, tag‖0³²)[:18]; K1‖K2 = HKDF-SHA256(key,
//     aesSealInfo), two AES-128 keys like RFC 5297's AES-SIV-CMAC-256 (whose 16-byte tag a
//     48-character token has no room for). Four AES blocks a token: a quarter of the HMAC
//     seal's time (BenchmarkSeal).
//   - the HMAC seal, the first one: tag = HMAC(key, 1‖payload)[:12], ciphertext = payload ⊕
//     HMAC(key, 2‖tag)[:18]. Tokens it minted are planted on the internet and stored in
//     hits, and a snippet's token must stay what its site pasted (docs/deployment.md).
//
// Nothing without the key tells the seals apart (the raw bytes of both are uniform), so
// open tries the AES seal first, then the HMAC seal: a forgery must pass either 96-bit tag.

// aesSealInfo is the HKDF info of the AES seal's keys.
const aesSealInfo = "flytrap decoy token seal: AES-CMAC tag, AES-CTR stream"

// aesSeal is the AES seal of one key, with its scratch blocks: a slice handed to a
// cipher.Block escapes, and would otherwise cost an allocation per AES block.
type aesSeal struct {
	tag, ctr cipher.Block // AES-128 under K1 (CMAC) and K2 (the stream)
	k1, k2   [16]byte     // CMAC's subkeys of K1
	t, in    [16]byte
	ks       [32]byte
}

func (a *aesSeal) init(key Key) {
	k, err := hkdf.Key(sha256.New, key, nil, aesSealInfo, 32)
	if err != nil {
		panic("decoy: deriving the token seal's keys: " + err.Error()) // 32 bytes is always a length HKDF-SHA256 gives
	}
	a.tag, _ = aes.NewCipher(k[:16]) // a 16-byte key never fails
	a.ctr, _ = aes.NewCipher(k[16:])
	a.t = [16]byte{}
	a.tag.Encrypt(a.t[:], a.t[:])
	a.k1 = cmacDouble(a.t)
	a.k2 = cmacDouble(a.k1)
}

// cmacDouble multiplies v by x in GF(2^128) (RFC 4493's subkey step).
func cmacDouble(v [16]byte) [16]byte {
	hi, lo := binary.BigEndian.Uint64(v[:8]), binary.BigEndian.Uint64(v[8:])
	carry := hi >> 63
	hi, lo = hi<<1|lo>>63, lo<<1^carry*0x87
	binary.BigEndian.PutUint64(v[:8], hi)
	binary.BigEndian.PutUint64(v[8:], lo)
	return v
}

// cmac returns AES-CMAC (RFC 4493) of msg.
func (a *aesSeal) cmac(msg []byte) [16]byte {
	a.t = [16]byte{}
	for len(msg) > 16 {
		xor16(&a.t, msg)
		a.tag.Encrypt(a.t[:], a.t[:])
		msg = msg[16:]
	}
	if len(msg) == 16 {
		a.in = a.k1
		xor16(&a.in, msg)
	} else {
		a.in = [16]byte{}
		copy(a.in[:], msg)
		a.in[len(msg)] = 0x80
		xor16(&a.in, a.k2[:])
	}
	xor16(&a.t, a.in[:])
	a.tag.Encrypt(a.t[:], a.t[:])
	return a.t
}

// stream XORs dst (at most 32 bytes) with AES-CTR(K2, tag‖0³²).
func (a *aesSeal) stream(dst []byte, tag []byte) {
	a.in = [16]byte{}
	copy(a.in[:], tag[:tagLen])
	a.ctr.Encrypt(a.ks[:16], a.in[:])
	a.in[15] = 1
	a.ctr.Encrypt(a.ks[16:], a.in[:])
	for i := range dst {
		dst[i] ^= a.ks[i]
	}
}

// xor16 XORs the first 16 bytes of b into dst (subtle.XORBytes costs as much as an AES block here).
func xor16(dst *[16]byte, b []byte) {
	_ = b[15]
	binary.LittleEndian.PutUint64(dst[:8], binary.LittleEndian.Uint64(dst[:8])^binary.LittleEndian.Uint64(b[:8]))
	binary.LittleEndian.PutUint64(dst[8:], binary.LittleEndian.Uint64(dst[8:])^binary.LittleEndian.Uint64(b[8:16]))
}

// seal makes the raw token of payload with the AES seal.
func (m *macer) seal(p *[payloadLen]byte) (raw [rawLen]byte) {
	t := m.aes.cmac(p[:])
	copy(raw[:tagLen], t[:tagLen])
	copy(raw[tagLen:], p[:])
	m.aes.stream(raw[tagLen:], raw[:tagLen])
	return raw
}

// sealHMAC makes the raw token of payload with the HMAC seal (snippets; tests of the old tokens).
func (m *macer) sealHMAC(p *[payloadLen]byte) (raw [rawLen]byte) {
	copy(raw[:tagLen], m.mac(domTag, p[:]))
	ks := m.mac(domStream, raw[:tagLen])
	for i := range payloadLen {
		raw[tagLen+i] = p[i] ^ ks[i]
	}
	return raw
}

// open authenticates raw, sealed by either seal, and returns its payload.
func (m *macer) open(raw *[rawLen]byte) (p [payloadLen]byte, ok bool) {
	if p, ok = m.openAES(raw); ok {
		return p, true
	}
	return m.openHMAC(raw)
}

func (m *macer) openAES(raw *[rawLen]byte) (p [payloadLen]byte, ok bool) {
	copy(p[:], raw[tagLen:])
	m.aes.stream(p[:], raw[:tagLen])
	t := m.aes.cmac(p[:])
	return p, subtle.ConstantTimeCompare(t[:tagLen], raw[:tagLen]) == 1
}

func (m *macer) openHMAC(raw *[rawLen]byte) (p [payloadLen]byte, ok bool) {
	ks := m.mac(domStream, raw[:tagLen])
	for i := range payloadLen {
		p[i] = raw[tagLen+i] ^ ks[i]
	}
	tag := m.mac(domTag, p[:])
	return p, subtle.ConstantTimeCompare(tag[:tagLen], raw[:tagLen]) == 1
}

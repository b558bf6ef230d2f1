package decoy

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// parsePlaced resolves a placement's token as the engine does: a token by ParseToken, an
// AWS key id by decrypting it and matching it against the hit that served it.
func parsePlaced(key Key, tok, hit string) (TokenRef, bool) {
	if strings.HasPrefix(tok, awsPrefix) {
		a, ok := ParseAWSKeyID(key, tok)
		if !ok {
			return TokenRef{}, false
		}
		return a.Match(key, hit)
	}
	return parseShaped(key, tok)
}

// sameMillisecond is another hit id of hit's millisecond.
func sameMillisecond(t *testing.T, hit string) string {
	u, ok := parseHitID(hit)
	if !ok {
		t.Fatal("bad hit id")
	}
	_, _ = rand.Read(u[6:])
	return formatHitID(&u)
}

func TestAWSKeyID(t *testing.T) {
	for range 200 {
		hit := newHitID(t)
		idx := int(hit[len(hit)-1]) % 256
		id := AWSKeyID(testKey, hit, idx)
		if len(id) != 20 || !strings.HasPrefix(id, "AKIA") || strings.Trim(id[4:], awsAlphabet) != "" {
			t.Fatalf("key id %q is not AWS-shaped", id)
		}
		if got := FindAWSKeyIDs("Authorization: AWS4-HMAC-SHA256 Credential=" + id + "/20260101/eu-west-1/s3/aws4_request, SignedHeaders=host, Signature=ab12"); len(got) != 1 || got[0] != id {
			t.Fatalf("FindAWSKeyIDs in a SigV4 header = %v", got)
		}
		a, ok := ParseAWSKeyID(testKey, id)
		if !ok || a.Index != idx {
			t.Fatalf("ParseAWSKeyID(%s) = %+v, %v", id, a, ok)
		}
		if ref, ok := a.Match(testKey, hit); !ok || ref != (TokenRef{HitID: hit, Index: idx, Purpose: AWSAccessKey}) {
			t.Fatalf("Match = %+v, %v", ref, ok)
		}
		if _, ok := a.Match(testKey, sameMillisecond(t, hit)); ok {
			t.Fatal("another hit of the same millisecond matches")
		}
		if b, ok := ParseAWSKeyID(Key("another installation's key"), id); ok {
			if _, ok := b.Match(Key("another installation's key"), hit); ok {
				t.Fatal("another key matches")
			}
		}
		if s := AWSSecretKey(testKey, hit, idx); len(s) != 40 || s == AWSSecretKey(testKey, hit, idx+1) {
			t.Fatalf("secret key %q", s)
		}
	}
	// An id of nobody's (AWS's documentation example) decodes to noise that matches nothing.
	if a, ok := ParseAWSKeyID(testKey, "AKIAIOSFODNN7EXAMPLE"); ok {
		if _, ok := a.Match(testKey, newHitID(t)); ok {
			t.Fatal("the example key id matches a hit")
		}
	}
	for _, bad := range []string{"", "AKIA", "AKIAIOSFODNN7EXAMPL1", "ASIAIOSFODNN7EXAMPLE", "akiaiosfodnn7example"} {
		if _, ok := ParseAWSKeyID(testKey, bad); ok {
			t.Errorf("ParseAWSKeyID(%q) ok", bad)
		}
	}
	if AWSKeyID(Key("short"), newHitID(t), 0) != "" || AWSKeyID(testKey, "hit_nope", 0) != "" {
		t.Error("AWSKeyID accepted bad arguments")
	}
}

func TestFindAWSKeyIDs(t *testing.T) {
	for text, want := range map[string]int{
		"X-Amz-Credential=AKIAABCDEFGHIJKLMNOP%2F20260101%2Fus-east-1": 1,
		`{"aws_access_key_id":"AKIAABCDEFGHIJKLMNOP"}`:                 1,
		"AKIAABCDEFGHIJKLMNOPQ":                                        0, // longer run
		"XAKIAABCDEFGHIJKLMNOP":                                        0,
		"AKIAABCDEFGHIJKLMN01":                                         0, // 0 and 1 are not base32
		"AKIAABCDEFGHIJKLMNOP AKIAABCDEFGHIJKLMNOP":                    1,
		strings.Repeat("AKIA", 5000):                                   0,
	} {
		if got := FindAWSKeyIDs(text); len(got) != want {
			t.Errorf("FindAWSKeyIDs(%.40q) = %v, want %d", text, got, want)
		}
	}
	if got := FindAWSKeyIDs(strings.Repeat("AKIAABCDEFGHIJKLMNOP AKIAABCDEFGHIJKLMNOQ AKIAABCDEFGHIJKLMNOR AKIAABCDEFGHIJKLMNOS AKIAABCDEFGHIJKLMNOT ", 3)); len(got) != maxAWSIDs {
		t.Errorf("%d ids, want the bound %d", len(got), maxAWSIDs)
	}
}

// Each secret of a credential file comes back, wherever a client sends it, as its purpose.
func TestPlantedSecretsAreTripwires(t *testing.T) {
	for _, path := range []string{"/.env.backup/prod", "/config/settings.json"} {
		hit := newHitID(t)
		out := Render(testKey, Spec{TrapID: "trp_01jqz8k7v3m2n4p5q6r7s8t001", Type: "credential", Path: path}, hit)
		body := string(out.Body)
		secrets := map[Purpose]string{}
		for _, pl := range out.Placements {
			if pl.Purpose.Secret() {
				secrets[pl.Purpose] = pl.Token
			}
		}
		for _, p := range []Purpose{DatabasePassword, RedisPassword, SessionSecret, AWSAccessKey, Credential} {
			if secrets[p] == "" || !strings.Contains(body, secrets[p]) {
				t.Fatalf("%s: no %v in the file", path, p)
			}
		}
		if strings.HasSuffix(path, ".json") {
			var v map[string]any
			if err := json.Unmarshal(out.Body, &v); err != nil {
				t.Fatal(err)
			}
		}
		db, redis, sess := secrets[DatabasePassword], secrets[RedisPassword], secrets[SessionSecret]
		if !strings.Contains(body, ":"+db+"@") || !strings.Contains(body, "redis://:"+redis+"@") {
			t.Fatalf("%s: the passwords are not in the connection strings:\n%s", path, body)
		}
		uses := map[string]Purpose{
			"postgres://svc:" + db + "@db.internal:5432/app":                  DatabasePassword,
			"dsn=" + url.QueryEscape("postgres://svc:"+db+"@db.internal/app"): DatabasePassword,
			`{"password":"` + db + `"}`:                                       DatabasePassword,
			"Authorization: Basic " + db:                                      DatabasePassword,
			"AUTH " + redis:                                                   RedisPassword,
			"redis://:" + redis + "@cache:6379/0":                             RedisPassword,
			"Cookie: session=" + sess + "; theme=dark":                        SessionSecret,
			"secret=" + sess:                                                  SessionSecret,
		}
		for text, want := range uses {
			refs := FindTokens(testKey, text)
			if len(refs) != 1 || refs[0].Purpose != want || refs[0].HitID != hit {
				t.Errorf("%s: FindTokens(%q) = %+v, want %v", path, text, refs, want)
				continue
			}
			if SecretName(testKey, refs[0]) == "" {
				t.Errorf("%v has no name", want)
			}
		}
	}
	if SecretName(testKey, TokenRef{Purpose: Callback}) != "" {
		t.Error("a callback is named a secret")
	}
}

func FuzzAWSKeyID(f *testing.F) {
	f.Add("Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request")
	f.Add("AKIAABCDEFGHIJKLMNOPAKIAABCDEFGHIJKLMNOP")
	f.Add("xAKIA234567234567234567")
	f.Fuzz(func(t *testing.T, text string) {
		ids := FindAWSKeyIDs(text)
		if len(ids) > maxAWSIDs {
			t.Fatalf("%d ids", len(ids))
		}
		for _, id := range ids {
			if !strings.Contains(text, id) {
				t.Fatalf("%q is not in the text", id)
			}
			a, ok := ParseAWSKeyID(testKey, id)
			if !ok || a.Index < 0 || a.Index > 255 {
				t.Fatalf("%q: %+v %v", id, a, ok)
			}
			if _, ok := a.Match(testKey, "hit_nope"); ok {
				t.Fatal("matched a malformed hit id")
			}
		}
	})
}

// The secret access key carries the key pair's pointer too: wherever it is pasted
// (a query, percent-encoded or not, a form, a JSON body with escaped slashes, a
// header, a cookie, a path segment), FindAWSSecrets finds it and it matches its hit
// only, with its whole MAC checked.
func TestAWSSecretKey(t *testing.T) {
	for range 300 {
		hit := newHitID(t)
		idx := int(hit[len(hit)-1]) % 256
		s := AWSSecretKey(testKey, hit, idx)
		if len(s) != 40 || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != "" {
			t.Fatalf("secret %q is not AWS-shaped", s)
		}
		for _, text := range []string{
			"/?aws_secret_access_key=" + url.QueryEscape(s),
			"/s3?aws_secret_access_key=" + s + "&region=eu-west-1",
			"aws_secret_access_key=" + url.QueryEscape(s) + "&aws_access_key_id=AKIAIOSFODNN7EXAMPLE",
			`{"aws":{"secret":"` + strings.ReplaceAll(s, "/", `\/`) + `"}}`,
			`{"secret":"` + strings.ReplaceAll(strings.ReplaceAll(s, "/", `\u002f`), "+", `\u002B`) + `"}`,
			"X-Aws-Secret-Access-Key: " + s,
			"Cookie: theme=dark; aws=" + url.PathEscape(s),
			"Content-Disposition: form-data; name=\"secret\"\r\n\r\n" + s + "\r\n--boundary--",
			"/keys/" + s + "/verify",
		} {
			found := false
			for _, c := range FindAWSSecrets(text) {
				a, ok := ParseAWSSecret(testKey, c)
				if !ok {
					continue
				}
				if ref, ok := a.Match(testKey, hit); ok {
					found = ref == (TokenRef{HitID: hit, Index: idx, Purpose: AWSAccessKey})
				}
			}
			if !found {
				t.Fatalf("the secret %q is not found in %q (candidates %v)", s, text, FindAWSSecrets(text))
			}
		}
		a, _ := ParseAWSSecret(testKey, s)
		if _, ok := a.Match(testKey, sameMillisecond(t, hit)); ok {
			t.Fatal("another hit of the same millisecond matches")
		}
		// One character changed in the MAC part: the pointer still decrypts, the MAC fails.
		b := []byte(s)
		b[30] ^= 1
		if a, ok := ParseAWSSecret(testKey, string(b)); ok {
			if _, ok := a.Match(testKey, hit); ok {
				t.Fatalf("a forged secret %s matches", b)
			}
		}
	}
	// AWS's documentation example and other 40-character runs match nothing.
	for _, s := range []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "0123456789abcdef0123456789abcdef01234567"} {
		for _, c := range FindAWSSecrets("aws_secret_access_key=" + s) {
			if a, ok := ParseAWSSecret(testKey, c); ok {
				if _, ok := a.Match(testKey, newHitID(t)); ok {
					t.Fatalf("%s matches a hit", s)
				}
			}
		}
	}
	if got := FindAWSSecrets(strings.Repeat("Ab1", 100)); len(got) != 0 {
		t.Errorf("a long run with no slash gave %d candidates, want none: %v", len(got), got)
	}
	var path strings.Builder
	for i := range 50 {
		fmt.Fprintf(&path, "/Ab%03d%s", i, strings.Repeat("x", 35))
	}
	path.WriteString("/")
	if got := FindAWSSecrets(path.String()); len(got) != maxAWSSecrets {
		t.Errorf("a long path gave %d candidates, want the bound %d", len(got), maxAWSSecrets)
	}
}

// BenchmarkFindAWSSecrets is the listener's added cost per request: a request text with a
// JWT (long runs, no secret) and a percent-encoded query; and one carrying a secret, with
// its decryption.
func BenchmarkFindAWSSecrets(b *testing.B) {
	plain := "/api/v1/orders?page=2&q=" + url.QueryEscape("blue shoes/size 42") + "\nBearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c\ntext/html\n"
	b.Run("no secret", func(b *testing.B) {
		for b.Loop() {
			for _, c := range FindAWSSecrets(plain) {
				ParseAWSSecret(testKey, c)
			}
		}
	})
	with := "/s3?aws_secret_access_key=" + url.QueryEscape(AWSSecretKey(testKey, newHitID(b), 3)) + "\n" + plain
	b.Run("a secret", func(b *testing.B) {
		for b.Loop() {
			for _, c := range FindAWSSecrets(with) {
				ParseAWSSecret(testKey, c)
			}
		}
	})
}

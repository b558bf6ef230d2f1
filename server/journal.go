package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/store"
)

// journalDir is the trap listener's hit journal directory (--hit-journal): the setting's
// directory, none for "off" (each answer then waits for its hit's commit), else the
// default: on SQLite "<file>.hits" beside the database (none for an in-memory database,
// whose hits die with the process anyway); on PostgreSQL a directory of the user's cache
// named after the database and the instance (its trap listener's address, which two
// instances on one machine cannot share), the same at every start. Two instances given one
// directory: the journal's lock stops the second.
func journalDir(setting string, db *store.DB, trapAddr string) (string, error) {
	switch setting {
	case "off":
		return "", nil
	case "":
	default:
		return setting, nil
	}
	if db.Dialect == dialect.SQLite {
		path, _, _ := strings.Cut(strings.TrimPrefix(db.DSN, "file:"), "?")
		if path == "" || strings.Contains(path, ":memory:") || strings.Contains(db.DSN, "mode=memory") {
			return "", nil
		}
		return path + ".hits", nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the hit journal (set --hit-journal): %w", err)
	}
	name := "db"
	if u, err := url.Parse(db.DSN); err == nil {
		name = strings.Trim(u.Path, "/")
		u.RawQuery, u.User = "", url.User(u.User.Username()) // the password names nothing
		sum := sha256.Sum256([]byte(u.String() + "\n" + trapAddr))
		name = fmt.Sprintf("%s-%s", safeName(name), hex.EncodeToString(sum[:4]))
	}
	return filepath.Join(cache, "flytrap", "hits-"+name), nil
}

// safeName keeps letters, digits, '-' and '_' of s (a database's name in a path).
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

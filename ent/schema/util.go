package schema

import (
	"regexp"
	"time"
)

// nowUTC is the time stamps are taken at: UTC, milliseconds, the precision the API shows and
// both databases keep, so what a create answers is what a later read returns.
func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// hostnamePattern accepts a DNS hostname (letters, digits, hyphens, dots), optionally with a port.
var hostnamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)

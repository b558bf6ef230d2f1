package schema

import (
	"regexp"
	"time"
)

func nowUTC() time.Time { return time.Now().UTC() }

// hostnamePattern accepts a DNS hostname (letters, digits, hyphens, dots), optionally with a port.
var hostnamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)

package scalar

import (
	"bytes"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
)

// MarshalTime writes a Time exactly as gqlgen's graphql.MarshalTime does (RFC 3339 with
// nanoseconds, quoted; the zero time is null), but formats it straight into the response
// buffer: gqlgen's allocates a closure, the formatted string and its quoted copy for every
// value, three allocations per time stamp of every row.
func MarshalTime(t time.Time) graphql.Marshaler {
	if t.IsZero() {
		return graphql.Null
	}
	return timeValue(t)
}

// UnmarshalTime reads a Time as gqlgen does.
func UnmarshalTime(v any) (time.Time, error) { return graphql.UnmarshalTime(v) }

type timeValue time.Time

func (t timeValue) MarshalGQL(w io.Writer) {
	if b, ok := w.(*bytes.Buffer); ok { // gqlgen writes a response into a bytes.Buffer
		// RFC 3339 text is printable ASCII: quoting it adds the quotes and nothing else.
		buf := append(b.AvailableBuffer(), '"')
		buf = time.Time(t).AppendFormat(buf, time.RFC3339Nano)
		b.Write(append(buf, '"'))
		return
	}
	io.WriteString(w, strconv.Quote(time.Time(t).Format(time.RFC3339Nano)))
}

type intValue int64

func (i intValue) MarshalGQL(w io.Writer) {
	if b, ok := w.(*bytes.Buffer); ok {
		b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(i), 10))
		return
	}
	io.WriteString(w, strconv.FormatInt(int64(i), 10))
}

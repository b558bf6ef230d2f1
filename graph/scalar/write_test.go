package scalar

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
)

// written is what a marshaller writes into a response buffer (bytes.Buffer, as gqlgen's) and
// into any other writer.
func written(m graphql.Marshaler) (string, string) {
	var b bytes.Buffer
	b.WriteString("x") // the buffer holds the response so far
	m.MarshalGQL(&b)
	var s strings.Builder
	m.MarshalGQL(&s)
	return strings.TrimPrefix(b.String(), "x"), s.String()
}

// Times and integers are written byte for byte as gqlgen's own marshallers write them.
func TestWrittenAsGqlgen(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -8*3600)}
	stamps := []time.Time{
		time.Date(2026, 11, 24, 5, 25, 21, 293_000_000, time.UTC),
		time.Date(2026, 11, 24, 5, 25, 21, 0, time.UTC),
		time.Date(2026, 11, 24, 5, 25, 21, 1, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
		{},
	}
	for _, ts := range stamps {
		for _, z := range zones {
			ts := ts
			if !ts.IsZero() {
				ts = ts.In(z)
			}
			want, _ := written(graphql.MarshalTime(ts))
			if gotBuf, gotOther := written(MarshalTime(ts)); gotBuf != want || gotOther != want {
				t.Errorf("%v: %s and %s, gqlgen %s", ts, gotBuf, gotOther, want)
			}
		}
	}
	if MarshalTime(time.Time{}) != graphql.Null {
		t.Error("the zero time is not null")
	}
	for _, n := range []int{0, 1, -1, 42, 255, 256, 100_000, math.MaxInt32, math.MinInt32} {
		want, _ := written(graphql.MarshalInt(n))
		if gotBuf, gotOther := written(MarshalInt(n)); gotBuf != want || gotOther != want {
			t.Errorf("%d: %s and %s, gqlgen %s", n, gotBuf, gotOther, want)
		}
	}
	for _, n := range []int64{0, -7, math.MaxInt64, math.MinInt64} {
		want, _ := written(graphql.MarshalInt64(n))
		if gotBuf, gotOther := written(MarshalInt64(n)); gotBuf != want || gotOther != want {
			t.Errorf("%d: %s and %s, gqlgen %s", n, gotBuf, gotOther, want)
		}
	}
}

package rest

import (
	"strings"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph"
)

// enumValue reads v as a value of the GraphQL enum typ, the one list of its values: the
// schema's spelling when v names one (without regard to case when fold), else an error
// naming field and listing the values, each spelled by spell as this API shows it (nil: as
// the schema does).
func enumValue(field, typ, v string, fold bool, spell func(string) string) (string, error) {
	vals := graph.EnumValues(typ)
	shown := make([]string, len(vals))
	for i, e := range vals {
		if e == v || fold && strings.EqualFold(e, v) {
			return e, nil
		}
		shown[i] = e
		if spell != nil {
			shown[i] = spell(e)
		}
	}
	return "", apperr.Invalid(field, "must be %s or %s", strings.Join(shown[:len(shown)-1], ", "), shown[len(shown)-1])
}

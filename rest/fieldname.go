package rest

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/flytrap/flytrap/graph"
)

// FieldName spells an input's name as this API's OpenAPI document does (siteID → site_id),
// so an error raised below the adapter, which names the field as its source did, reads in
// the REST spelling. A name the document does not know is kept as it is.
func FieldName(name string) string {
	if n, ok := restNames()[graph.FieldKey(name)]; ok {
		return n
	}
	return name
}

// restNames maps graph.FieldKey of every parameter and property name of openapi.json to
// its spelling. The document spells its own fields in snake_case; where a camelCase name
// of the analytics shapes (tripwiresFired) shares a key with one, the snake_case one wins.
var restNames = sync.OnceValue(func() map[string]string {
	var doc any
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		panic("rest: openapi.json: " + err.Error()) // embedded and tested: cannot happen in a build
	}
	names := map[string]string{}
	add := func(name string) {
		key := graph.FieldKey(name)
		if old, ok := names[key]; ok && strings.Contains(old, "_") {
			return
		}
		names[key] = name
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name := range props {
					add(name)
				}
			}
			if in, _ := v["in"].(string); in == "query" || in == "path" {
				if name, ok := v["name"].(string); ok {
					add(name)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return names
})

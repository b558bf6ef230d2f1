// Command genclient generates package apiclient, the typed REST client of the flytrap CLI,
// with oapi-codegen from rest/openapi.json (go generate ./... runs it from apiclient/).
//
// The document is OpenAPI 3.1; oapi-codegen reads 3.0. Before generating, a copy of the
// document is brought to what oapi-codegen understands, leaving rest/openapi.json as it is:
// a type list with "null" becomes the type and nullable, any other type list is dropped (a
// value of either type), and the EventType parameter gets a Go name apart from the Event
// schema's type enum.
package main

import (
	"encoding/json"
	"log"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("genclient: ")
	raw, err := os.ReadFile("../rest/openapi.json")
	if err != nil {
		log.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		log.Fatal(err)
	}
	compat(doc)
	if params, ok := dig(doc, "components", "parameters").(map[string]any); ok {
		if p, ok := params["EventType"].(map[string]any); ok {
			p["x-go-name"] = "EventTypeFilter"
		}
	}
	dir, err := os.MkdirTemp("", "genclient")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	spec := filepath.Join(dir, "openapi.json")
	out, err := json.Marshal(doc)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(spec, out, 0o644); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", spec)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatal(err)
	}
}

// compat rewrites the 3.1 type lists of every schema under v.
func compat(v any) {
	switch x := v.(type) {
	case map[string]any:
		if types, ok := x["type"].([]any); ok {
			var named []any
			for _, t := range types {
				if t != "null" {
					named = append(named, t)
				}
			}
			if len(named) == 1 {
				x["type"] = named[0]
				if len(named) < len(types) {
					x["nullable"] = true
				}
			} else {
				delete(x, "type")
			}
		}
		for _, c := range x {
			compat(c)
		}
	case []any:
		for _, c := range x {
			compat(c)
		}
	}
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Package web holds the dashboard: a Preact single-page app (source in web/src, built by
// `npm run build` into web/dist, which is committed) embedded into the flytrap binary so it
// serves the dashboard with no Node.js on the machine. server/web.go serves it at /.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is the built dashboard: index.html at its root, hashed assets under assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path; fs.Sub fails only on invalid ones
	}
	return sub
}

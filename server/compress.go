package server

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/zstd"

	"github.com/flytrap/flytrap/server/httpx"
)

// compressor answers with zstd or gzip when the client accepts it (zstd preferred,
// as browsers that send both decode it faster), for bodies of 1 KiB and more. The
// dashboard's bundle shrinks from 122 KB to 48 KB. Event streams are
// never compressed (a compressor holds bytes back, and a stream is written as it
// happens); WebSocket upgrades pass by untouched; a partial (Range) answer is left as is.
// Secrets in compressed answers are not exposed to BREACH-style guessing: the API
// authenticates with a bearer header, which a cross-site page cannot make a browser
// send (decisions.md, "Compression").
func compressor() func(http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.ExceptContentTypes([]string{"text/event-stream"}),
		gzhttp.MinSize(gzhttp.DefaultMinSize),
		// zstd's fastest level (gzhttp's default) packs worse than gzip's default here.
		gzhttp.ZstdCompressionLevel(int(zstd.SpeedDefault)),
	)
	if err != nil { // the options above are constants: this is a programming error
		panic("compression options: " + err.Error())
	}
	return func(next http.Handler) http.Handler {
		compressed := wrap(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if httpx.IsWebsocketUpgrade(r) {
				next.ServeHTTP(w, r)
				return
			}
			compressed.ServeHTTP(w, r)
		})
	}
}

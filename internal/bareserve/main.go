// Command bareserve is the yardstick of the listener's throughput (scripts/listener-wrk.sh):
// a bare net/http server answering every request with the bytes of one file, as the trap
// listener answers a decoy, with nothing recorded.
//
// Usage: go run ./internal/bareserve -addr 127.0.0.1:18700 -file page.html
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18700", "listen address")
	file := flag.String("file", "", "the response body")
	ctype := flag.String("type", "text/html; charset=utf-8", "its Content-Type")
	flag.Parse()
	body, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	n := strconv.Itoa(len(body))
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", *ctype)
		h.Set("Content-Length", n)
		_, _ = w.Write(body)
	})))
}

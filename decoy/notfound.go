package decoy

import (
	"crypto/sha256"
	"strings"
)

// NotFound is the bland 404 of the trap listener for unknown or inactive paths: nginx's
// own error page, which names no service. Its size varies slightly by path (nginx's
// padding comments that keep browsers from swapping in their "friendly" error pages),
// while one path always gets the same bytes, as from a real server.
func NotFound(path string) Rendered {
	h := sha256.Sum256([]byte("flytrap 404\x00" + path))
	var b strings.Builder
	b.Grow(600)
	b.WriteString("<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
	for range int(h[0]) % 7 {
		b.WriteString("<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n")
	}
	return Rendered{Status: 404, ContentType: "text/html", Body: []byte(b.String())}
}

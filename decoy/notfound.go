package decoy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
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

// ServerHeader is the Server header of every trap listener response: nginx with
// server_tokens off, the server whose 404 page NotFound imitates.
const ServerHeader = "nginx"

// Allowed is the Allow header of a trap: the methods its decoy answers.
const Allowed = "GET, HEAD, POST"

// MethodAllowed reports whether a trap answers method with its decoy; any other method
// (PUT, DELETE, PATCH, TRACE, OPTIONS…) gets MethodNotAllowed, as from a real server.
func MethodAllowed(method string) bool {
	return method == "GET" || method == "HEAD" || method == "POST"
}

// MethodNotAllowed is a trap's answer to a method it does not serve: nginx's own 405 page
// for the documents, an API's JSON error for the JSON decoys; both say what is allowed.
func MethodNotAllowed(kind *Kind, method string) Rendered {
	h := map[string]string{"Allow": Allowed}
	if kind.Format == FormatJSON {
		return Rendered{Status: 405, ContentType: "application/json", Header: h,
			Body: []byte(`{"error":{"code":"method_not_allowed","message":"The method is not allowed for the requested URL."}}` + "\n")}
	}
	return Rendered{Status: 405, ContentType: "text/html", Header: h,
		Body: []byte("<html>\r\n<head><title>405 Not Allowed</title></head>\r\n<body>\r\n<center><h1>405 Not Allowed</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")}
}

// TokenAnswer is the answer to a request for a URL a decoy planted (path ends in one of
// its tokens): content that fits the URL's home, so a reader goes on as if it worked and
// a script cannot tell these URLs by one fixed acknowledgement. Documents under the
// print and archive homes, a PDF file under the file homes, a redirect to a login page
// under the account-confirmation homes, JSON under the API homes. The details are
// seeded by the path: one URL always gets the same answer.
func TokenAnswer(path, method string) Rendered {
	h := sha256.Sum256([]byte("flytrap token answer\x00" + path))
	home := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		home = path[:i+1]
	}
	switch home {
	case "/docs/print/", "/static/docs/", "/kb/archive/":
		title := titleCase(pathWords[int(h[0])%len(pathWords)]) + " " + titleSuffixes[int(h[1])%len(titleSuffixes)]
		return Rendered{Status: 200, ContentType: "text/html; charset=utf-8", Body: []byte("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
			title + " (printable)</title>\n<meta name=\"robots\" content=\"noindex, nofollow\">\n</head>\n<body>\n<h1>" + title +
			"</h1>\n<p>This printable copy has been archived. The current version is on the internal portal; ask the page owner for access.</p>\n</body>\n</html>\n")}
	case "/files/preview/", "/assets/ref/":
		return Rendered{Status: 200, ContentType: "application/pdf", Header: map[string]string{"Content-Disposition": "inline; filename=\"export-" + hex.EncodeToString(h[:4]) + ".pdf\""}, Body: blankPDF}
	case "/auth/confirm/", "/account/verify/":
		return Rendered{Status: 302, ContentType: "text/html", Header: map[string]string{"Location": "/login?next=" + url.QueryEscape(home)},
			Body: []byte("<html>\r\n<head><title>302 Found</title></head>\r\n<body>\r\n<center><h1>302 Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")}
	case "/api/v1/export/":
		return jsonAnswer(`{"id":"exp_` + hex.EncodeToString(h[:8]) + `","status":"queued","format":"csv","estimated_seconds":` + strconv.Itoa(30+int(h[8])) + "}\n")
	case "/api/v1/verify/", "/api/session/verify/":
		return jsonAnswer(`{"verified":true,"session":"ses_` + hex.EncodeToString(h[:10]) + `","expires_in":3600}` + "\n")
	case "/.well-known/agent-auth/", "/api/v1/agents/register/", "/compliance/ai-registration/", "/.well-known/ai-policy/register/":
		status := "registered"
		if method == "GET" || method == "HEAD" {
			status = "pending"
		}
		return jsonAnswer(`{"status":"` + status + `","registration_id":"reg_` + hex.EncodeToString(h[:8]) + `"}` + "\n")
	}
	return jsonAnswer(`{"status":"ok"}` + "\n")
}

func jsonAnswer(s string) Rendered {
	return Rendered{Status: 200, ContentType: "application/json", Body: []byte(s)}
}

// blankPDF is a valid one-page PDF with a line of text, its cross-reference table exact.
var blankPDF = func() []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		"", // the content stream, below
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	content := "BT /F1 11 Tf 56 780 Td (Export in progress. This file will be replaced when the export completes.) Tj ET"
	objs[3] = "<< /Length " + strconv.Itoa(len(content)) + " >>\nstream\n" + content + "\nendstream"
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		b.WriteString(strconv.Itoa(i+1) + " 0 obj\n" + o + "\nendobj\n")
	}
	xref := b.Len()
	b.WriteString("xref\n0 " + strconv.Itoa(len(objs)+1) + "\n0000000000 65535 f \n")
	for _, off := range offsets {
		b.WriteString(fmt.Sprintf("%010d 00000 n \n", off))
	}
	b.WriteString("trailer\n<< /Size " + strconv.Itoa(len(objs)+1) + " /Root 1 0 R >>\nstartxref\n" + strconv.Itoa(xref) + "\n%%EOF\n")
	return []byte(b.String())
}()

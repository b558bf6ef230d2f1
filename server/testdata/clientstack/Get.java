// A request by Java's own HTTP client (java.net.http, JDK 11+), for TestClientStacks
// (server/clientstack_test.go): java Get.java URL [USER_AGENT]. It trusts any certificate: test use only.
import java.net.URI;
import java.net.http.*;
import javax.net.ssl.*;
import java.security.cert.X509Certificate;

public class Get {
  public static void main(String[] a) throws Exception {
    TrustManager[] all = { new X509TrustManager() {
      public void checkClientTrusted(X509Certificate[] c, String s) {}
      public void checkServerTrusted(X509Certificate[] c, String s) {}
      public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; } } };
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, all, null);
    HttpClient c = HttpClient.newBuilder().sslContext(ctx).build();
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(a[0]));
    if (a.length > 1 && !a[1].isEmpty()) b.header("User-Agent", a[1]);
    HttpResponse<String> r = c.send(b.build(), HttpResponse.BodyHandlers.ofString());
    System.out.println(r.statusCode() + " " + r.version());
  }
}

package auth

import "github.com/flytrap/flytrap/settings"

// Declare declares the identity provider's settings (JWT sign-in) over c.
func (c *JWTConfig) Declare(s *settings.Set) {
	s.String(&c.JWKSURL, "jwks-url", "", "identity provider's JWKS URL; empty disables JWT sign-in").
		DefaultDoc("empty (JWT sign-in off)").
		Doc("Identity provider's JWKS URL")
	s.String(&c.Issuer, "jwt-issuer", "", "required JWT issuer").
		Doc("Required JWT issuer (must be set with `--jwks-url`)")
	s.String(&c.Audience, "jwt-audience", "", "required JWT audience").
		Doc("Required JWT audience (must be set with `--jwks-url`)")
	s.String(&c.OrgClaim, "jwt-org-claim", defaultOrgClaim, "JWT claim holding the organization id")
	s.String(&c.ScopeClaim, "jwt-scope-claim", defaultScopeClaim, "JWT claim holding the scope")
	s.Rule(func() error { return c.Validate() }) // a closure: a method value would copy c now
}

package webhook

import "github.com/flytrap/flytrap/settings"

// DeclareNetwork declares the instance-wide network the dispatcher may reach, over c
// (per organization: flytrap admin orgs set-webhook-network).
func (c *Config) DeclareNetwork(s *settings.Set) {
	s.Bool(&c.AllowPrivate, "webhook-allow-private", false, "let every organization's webhooks reach loopback, private, link-local and metadata addresses (answers from them are stored only for organizations that opted in; see flytrap admin orgs set-webhook-network)").
		Doc("Let every organization's webhooks reach loopback, private, link-local and cloud-metadata addresses. Answers from them are not stored unless the organization opted in; per organization: `flytrap admin orgs set-webhook-network`")
	s.Func("webhook-allow-cidrs", "", "comma-separated CIDRs every organization's webhooks may reach even though they are private (per organization: flytrap admin orgs set-webhook-network)", func(v string) error {
		ps, err := settings.ParsePrefixes(v)
		c.AllowCIDRs = ps
		return err
	}).
		Doc("Comma-separated CIDRs every organization's webhooks may reach although they are private (e.g. an internal SIEM); per organization: `flytrap admin orgs set-webhook-network`").DefaultDoc("none")
}

// Declare declares the dispatcher's pace over c: workers, an attempt's time limit, the
// polling interval. The defaults are DefaultConfig's; Validate is their rule.
func (c *Config) Declare(s *settings.Set) {
	d := DefaultConfig()
	s.Int(&c.Workers, "webhook-workers", d.Workers, "webhook deliveries sent at once per instance")
	s.Duration(&c.Timeout, "webhook-timeout", d.Timeout, "time limit of one webhook attempt").
		Doc("Time limit of one webhook attempt, connection to last byte")
	s.Duration(&c.Poll, "webhook-poll-interval", d.Poll, "how often due webhook deliveries are looked for besides the wake-up on commit").
		Doc("How often due webhook deliveries are looked for, besides the wake-up on commit")
	s.Rule(func() error { return c.Validate() })
}

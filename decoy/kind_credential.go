package decoy

// WhereCredentialFile is a placement in a leaked-looking config file.
const WhereCredentialFile = "credential_file"

// credentialKind is a leaked-looking config file with planted keys (text.go renders it):
// an env file, or JSON when the path says so.
type credentialKind struct{}

func init() { register(credentialKind{}) }

func (credentialKind) About() About {
	return About{Name: "credential", Help: "a leaked-looking config with planted keys", Order: 50, Format: FormatText, Listed: true,
		Wheres: map[string]string{WhereCredentialFile: "a leaked config file"}, Stems: []string{
			"/.env.backup/", "/config/", "/deploy/secrets/", "/.aws/", "/backup/config/",
		}}
}

func (credentialKind) render(r *renderer) Rendered { return r.credentialFile() }
func (credentialKind) lureTarget()                 {}

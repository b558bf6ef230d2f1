package decoy

// Word banks the decoys are made of. Numbers in stable text avoid three-digit runs
// beginning with 1, the shape of a challenge answer.

var firstNames = [...]string{
	"Aisha", "Alex", "Amara", "Ben", "Carlos", "Chloe", "Daniel", "Dana", "Elena", "Ethan",
	"Fatima", "Grace", "Hannah", "Hiro", "Isaac", "Jonas", "Julia", "Kai", "Laura", "Leo",
	"Maya", "Marcus", "Nadia", "Noah", "Olivia", "Omar", "Priya", "Rafael", "Sara", "Sofia",
	"Tom", "Wei", "Yusuf", "Zoe", "Ingrid", "Mateo", "Lena", "Ravi", "Claire", "Diego",
}

var lastNames = [...]string{
	"Anderson", "Becker", "Chen", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ito",
	"Jensen", "Kaur", "Kowalski", "Larsen", "Lopez", "Meyer", "Moreau", "Nakamura", "Novak", "Okafor",
	"Patel", "Petrov", "Quinn", "Rossi", "Schmidt", "Silva", "Singh", "Sato", "Tanaka", "Turner",
	"Vogel", "Walsh", "Weber", "Yilmaz", "Zhang", "Keller", "Lindqvist", "Murphy", "Haddad", "Brennan",
}

var companyNames = [...]string{
	"Northwind", "Halcyon", "Bluefin", "Corvex", "Lattice", "Meridian", "Oakridge", "Quantive",
	"Ravelin", "Stratus", "Tidewater", "Verdant", "Kestrel", "Ironbark", "Solstice", "Brightpath",
}

var teams = [...]string{
	"Platform", "Payments", "Data Engineering", "SRE", "Security", "Growth", "Identity",
	"Billing Ops", "Internal Tools", "Customer Success", "Infrastructure", "Finance Systems",
}

var services = [...]string{
	"ledger-api", "billing-worker", "export-svc", "auth-gateway", "customer-sync", "report-runner",
	"vault-proxy", "payroll-batch", "inventory-core", "pricing-engine", "account-svc", "notify-hub",
}

var envs = [...]string{"prod-eu-west", "prod-us-east", "prod-ap-south", "staging", "prod-eu-central"}

var databases = [...]string{"pg-main", "pg-ledger", "mysql-core", "pg-analytics", "pg-accounts"}

var buckets = [...]string{"s3://ops-snapshots", "s3://data-exports-prod", "gs://internal-backups", "s3://finance-archive"}

var groups = [...]string{"data-owners", "eng-oncall", "finance-admins", "platform-admins", "support-tier2", "sec-reviewers"}

var channels = [...]string{"ops-alerts", "platform-help", "data-eng", "sec-incidents", "billing-oncall", "infra"}

var retentionDays = [...]string{"30", "45", "60", "90", "365"}

var rowLimits = [...]string{"50,000", "250,000", "500,000", "2 million"}

// docParagraphs are the body text of document decoys; {x} fills from the trap's choices.
var docParagraphs = [...]string{
	"This page describes how the {team} team operates the {topic} pipeline in {env}. It is the source of truth for on-call engineers; if something here is out of date, update it or ask in #{chan}.",
	"Access to {topic} data is restricted to members of the {group} group. Requests go through the access portal and are approved by the data owner, {person}.",
	"The {service} service reads from the primary {db} cluster and writes nightly snapshots to {bucket}. Snapshots are retained for {days} days and are encrypted at rest.",
	"Credentials for {service} are rotated every {days} days by the secrets job. Do not paste keys into tickets or chat; use the vault path listed below.",
	"Exports larger than {rows} rows are split into chunks and uploaded as compressed CSV. Consumers should verify the manifest checksum before loading anything downstream.",
	"During incidents, page the {team} on-call through the escalation policy before making manual changes to {topic} records. Manual changes must be noted in the incident timeline.",
	"Known issue: the {service} retry queue can back up when the upstream rate limit is hit. Drain it with the runbook command below rather than restarting pods.",
	"All changes to {topic} configuration are reviewed in the infrastructure repository and applied by CI; manual edits in the console are reverted on the next deploy.",
	"Audit logs for {topic} access are shipped to the SIEM and reviewed weekly by Security. Unusual bulk reads raise an alert in #{chan}.",
	"The {topic} reconciliation job runs at 02:30 UTC. If it fails twice in a row, {person} should be notified and the job re-run with the --resume flag.",
}

var docSteps = [...]string{
	"Confirm you are on the corporate VPN and can reach the {env} bastion.",
	"Request the {group} role in the access portal; approval usually takes less than an hour.",
	"Run <code>make {topic}-check ENV={env}</code> and confirm it passes.",
	"Open a change ticket and link it in #{chan} before you start.",
	"Apply the change with <code>kubectl -n {topic} rollout restart deploy/{service}</code>.",
	"Watch the {service} dashboard for fifteen minutes before closing the ticket.",
	"Record what you did in the on-call log, including the ticket number.",
	"Fetch the current credentials with <code>vault kv get secret/{env}/{service}</code>.",
}

var sectionTitles = [...]string{"Overview", "Access", "Architecture", "Operations", "Data retention", "Known issues", "Credentials", "Escalation"}

var changeNotes = [...]string{
	"Updated escalation contacts", "Fixed broken dashboard link", "Added rotation steps", "Clarified access approval",
	"Removed deprecated endpoint", "Documented retry queue drain", "Updated retention period", "Minor formatting",
	"Added troubleshooting section", "Linked new alert runbook",
}

var recordStatuses = [...]string{"active", "active", "active", "trialing", "past_due", "suspended"}

var plans = [...]string{"starter", "growth", "business", "enterprise"}

var roles = [...]string{"admin", "member", "viewer", "billing", "owner", "support"}

var mailDomains = [...]string{"gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com"}

var cities = [...]string{"Berlin", "Austin", "Lisbon", "Toronto", "Melbourne", "Dublin", "Seattle", "Madrid", "Oslo", "Denver"}

var currencies = [...]string{"usd", "eur", "gbp"}

var departments = [...]string{"Engineering", "Sales", "Finance", "Support", "Marketing", "Operations"}

// Package docs holds Flytrap's documentation; its test runs every shell command of
// README.md and docs/*.md against a real flytrap process, so that none can rot.
package docs

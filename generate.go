// Package flytrap is the root of the Flytrap module; see README.md.
package flytrap

//go:generate go run ./internal/genvocab
//go:generate go run ./ent/entc.go
//go:generate go tool gqlgen generate
//go:generate go run ./internal/gqlpatch

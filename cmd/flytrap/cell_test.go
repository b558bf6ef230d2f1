package main

import "testing"

// TestCellNeutralisesTerminalTricks: a table cell holds attacker-controlled text (user
// agents, paths); escape sequences, and bidirectional overrides and invisible characters
// that make a terminal show another text than the one recorded ("Trojan Source"), become ?.
func TestCellNeutralisesTerminalTricks(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b]8;;http://evil/\x07click\x1b]8;;\x07": "?]8;;http://evil/?click?]8;;?",
		"\u009b31mred":         "?31mred",
		"Mozilla\u202egpj.exe": "Mozilla?gpj.exe",
		"/admin\u2066x\u2069":  "/admin?x?",
		"curl\u200b/8":         "curl?/8",
		"a\tb\nc":              "a?b?c",
		"Müller/1.0 (日本)":      "Müller/1.0 (日本)",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}

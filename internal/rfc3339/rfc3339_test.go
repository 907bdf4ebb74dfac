package rfc3339

import "testing"

func TestMatch(t *testing.T) {
	for s, want := range map[string]bool{
		"2024-12-28T10:00:00Z":           true,
		"2024-12-28T10:00:00.5Z":         true,
		"2024-12-28T10:00:00.123456789Z": true,
		"2024-12-28T10:00:00+00:00":      true,
		"2024-12-28T11:00:00-01:30":      true,
		"2024-13-28T10:00:00Z":           true, // the layout only: time.Parse refuses month 13
		"2024-12-28T10:00:00":            false,
		"2024-12-28":                     false,
		"2024-12-28t10:00:00Z":           false,
		"2024-12-28T10:00:00z":           false,
		"2024-12-28T1:00:00Z":            false,
		"2024-12-28 10:00:00Z":           false,
		"2024-12-28T10:00:00,5Z":         false,
		"2024-12-28T10:00:00.Z":          false,
		"2024-12-28T10:00:00+0000":       false,
		"2024-12-28T10:00:00+00:0a":      false,
		"2024-12-28T10:00:00Z ":          false,
		"":                               false,
	} {
		if got := Match(s); got != want {
			t.Errorf("Match(%q) = %v, want %v", s, got, want)
		}
	}
}

package rpc

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestParseSkillFile(t *testing.T) {
	cases := []struct {
		in, name, desc string
		ok             bool
	}{
		{"---\nname: a\ndescription: plain text\n---\nbody", "a", "plain text", true},
		{"\xef\xbb\xbf---\r\nname: \"quoted\"\r\ndescription: 'it''s'\r\n---\r\n", "quoted", "it's", true},
		{"---\nname: b\ndescription: >\n  folded\n  text\nother: x\n---\n", "b", "folded text", true},
		{"---\nname: c\n", "", "", false},
		{"no front matter", "", "", false},
	}
	for _, c := range cases {
		name, desc, ok := ParseSkillFile([]byte(c.in))
		if name != c.name || desc != c.desc || ok != c.ok {
			t.Errorf("ParseSkillFile(%q) = %q %q %v", c.in, name, desc, ok)
		}
	}
}

func TestMergeSkills(t *testing.T) {
	cli := gjson.Parse(`[{"name":"mine","description":"From disk (project)","argumentHint":""},
		{"name":"u","description":"User one (user)"},
		{"name":"dataviz","description":"Charts","builtin":true},
		{"name":"plug","description":"From a plugin"}]`)
	disk := []Skill{
		{ID: "repo:mine", Name: "mine", Description: "From disk", Path: "/p/SKILL.md", Dir: "/p", Scope: "repo", MtimeMs: 5},
		{ID: "user:lonely", Name: "lonely", Scope: "user", Path: "/u/SKILL.md"},
	}
	got, truncated := MergeSkills(cli, disk)
	want := []string{"repo:mine", "user:lonely", "user:u", "builtin:dataviz", "other:plug"}
	if len(got) != len(want) || truncated {
		t.Fatalf("MergeSkills: %+v", got)
	}
	for i, s := range got {
		if s.ID != want[i] {
			t.Errorf("skill %d: %s, want %s", i, s.ID, want[i])
		}
	}
	if got[0].Path != "/p/SKILL.md" || got[2].Description != "User one" || got[3].Path != "" {
		t.Errorf("merge: %+v", got)
	}
}

package rpc

import (
	"bytes"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// MaxSkills bounds the skills one skills.list returns.
const MaxSkills = 1000

// ParseSkillFile reads the front matter of a SKILL.md: the name and
// description between the leading "---" lines. Quoted values are
// unquoted; a folded or literal block (">" or "|") is joined into one
// line. ok is false when there is no front matter.
func ParseSkillFile(data []byte) (name, description string, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return "", "", false
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return "", "", false
	}
	fields := map[string]string{}
	for i := 1; i < end; i++ {
		line := lines[i]
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' {
			continue
		}
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if v == "" || v == ">" || v == "|" || v == ">-" || v == "|-" {
			var parts []string
			for i+1 < end && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t")) {
				i++
				parts = append(parts, strings.TrimSpace(lines[i]))
			}
			v = strings.Join(parts, " ")
		}
		fields[k] = unquote(v)
	}
	return fields["name"], fields["description"], true
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		inner := v[1 : len(v)-1]
		if v[0] == '\'' {
			return strings.ReplaceAll(inner, "''", "'")
		}
		return strings.ReplaceAll(inner, `\"`, `"`)
	}
	return v
}

// scopeSuffixes are what the CLI appends to the description of a skill in
// its reload_skills answer.
var scopeSuffixes = [...]struct{ suffix, scope string }{
	{" (project)", "repo"},
	{" (local)", "repo"},
	{" (user)", "user"},
}

// TrimSkillScope removes the " (user)" / " (project)" the CLI appends to a
// skill's description.
func TrimSkillScope(desc string) string {
	for _, s := range scopeSuffixes {
		if t, ok := strings.CutSuffix(desc, s.suffix); ok {
			return t
		}
	}
	return desc
}

// SkillScope is the scope of a skill in the CLI's reload_skills answer:
// "builtin", "repo", "user", or "other" (plugins and the like).
func SkillScope(s gjson.Result) string {
	if s.Get("builtin").Bool() {
		return "builtin"
	}
	desc := s.Get("description").Str
	for _, x := range scopeSuffixes {
		if strings.HasSuffix(desc, x.suffix) {
			return x.scope
		}
	}
	return "other"
}

var scopeOrder = map[string]int{"repo": 0, "user": 1, "builtin": 2, "other": 3}

// MergeSkills combines the skills the CLI knows (its reload_skills
// answer's "skills", possibly absent) with the SKILL.md files found on
// disk: a skill on disk keeps its path, folder and mtime; a skill only the
// CLI knows (built in, from a plugin) has neither. Skills on disk the CLI
// does not list are kept too. The result is sorted by scope (repo, user,
// builtin, other) and name, and cut to MaxSkills (truncated then true).
func MergeSkills(cli gjson.Result, disk []Skill) (skills []Skill, truncated bool) {
	used := make([]bool, len(disk))
	find := func(name, scope string) int {
		for i, d := range disk {
			if !used[i] && d.Name == name && (scope == "" || d.Scope == scope) {
				return i
			}
		}
		return -1
	}
	cli.ForEach(func(_, s gjson.Result) bool {
		name := s.Get("name").Str
		if name == "" {
			return true
		}
		scope := SkillScope(s)
		want := scope
		if scope == "other" {
			want = ""
		}
		if i := find(name, want); i >= 0 && scope != "builtin" {
			used[i] = true
			d := disk[i]
			if d.Description == "" {
				d.Description = TrimSkillScope(s.Get("description").Str)
			}
			skills = append(skills, d)
			return true
		}
		skills = append(skills, Skill{ID: scope + ":" + name, Name: name,
			Description: TrimSkillScope(s.Get("description").Str), Scope: scope})
		return true
	})
	for i, d := range disk {
		if !used[i] {
			skills = append(skills, d)
		}
	}
	slices.SortStableFunc(skills, func(a, b Skill) int {
		if d := scopeOrder[a.Scope] - scopeOrder[b.Scope]; d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(skills) > MaxSkills {
		return skills[:MaxSkills], true
	}
	return skills, false
}
